#include "dataplane/port.hpp"

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "dataplane/eal_args.hpp"
#include "dataplane/ipv6_port.hpp"
#include "dataplane/rss.hpp"

namespace ws::dp {

namespace {

// af_packet's frame size, from "framesz=N" in the device string (2048 by default).
uint32_t af_packet_framesz(const std::string& device) {
  uint32_t n = devarg_u32(device, "framesz");
  return n != 0 ? n : 2048;
}

std::string err_str(int rc) { return std::strerror(rc < 0 ? -rc : rc); }

// One port being set up: the inputs, the device's description and the configuration
// built from both, in the order probe, configure, create_pool, setup_queues, start.
struct PortSetup {
  const config::Config& cfg;
  const config::PortConfig& pc;
  PortInfo& out;
  std::string& error;
  std::string key;  // "ports[i] (name)", the start of every error
  rte_eth_dev_info info{};
  rte_eth_conf conf{};
  uint32_t dev_mtu = 0;  // the MTU given to the device (see choose_mtu)
  bool af_packet = false;
  bool memif = false;
  bool software = false;  // offloads: software
};

// Probe: the device exists, and has the queues the config asks for.
bool probe(PortSetup& s) {
  const auto& pc = s.pc;
  PortInfo& out = s.out;
  out.name = pc.name;
  out.device = port_device_name(pc);
  out.mtu = pc.mtu;
  out.rx_queues = pc.rx_queues;
  out.tx_queues = pc.tx_queues;
  uint16_t pid = 0;
  if (rte_eth_dev_get_port_by_name(out.device.c_str(), &pid) != 0) {
    s.error = s.key + ": device '" + out.device +
              "' did not appear (check the vdev string or PCI address)";
    return false;
  }
  out.port_id = pid;
  int rc = rte_eth_dev_info_get(pid, &s.info);
  if (rc != 0) {
    s.error = s.key + ": cannot read device info: " + err_str(rc);
    return false;
  }
  out.driver = s.info.driver_name != nullptr ? s.info.driver_name : "";
  s.af_packet = out.driver == "net_af_packet";
  // memif (DPDK 22.11) reports a 1518-byte frame limit, which ethdev enforces in
  // configure, but its datapath has no length check: it copies a frame of up to
  // `bsize` bytes into one ring buffer (eal_args sets bsize to hold the MTU's frame)
  // and RX gathers it into an mbuf chain.
  s.memif = out.driver == "net_memif";
  s.software = s.cfg.dataplane.offloads == config::Offloads::software;
  if (pc.rx_queues > s.info.max_rx_queues || pc.tx_queues > s.info.max_tx_queues) {
    s.error = s.key + ": rx_queues/tx_queues " + std::to_string(pc.rx_queues) + "/" +
              std::to_string(pc.tx_queues) + " exceed the device's " +
              std::to_string(s.info.max_rx_queues) + "/" + std::to_string(s.info.max_tx_queues);
    return false;
  }
  // Every core transmits on a TX queue of its own (a queue has one writer): with several
  // cores each owns flows on every port, its own connections and those handed to it.
  size_t n_lcores = s.cfg.dataplane.lcores.size();
  if (pc.tx_queues < n_lcores) {
    s.error = s.key + ": tx_queues (" + std::to_string(pc.tx_queues) +
              ") must be at least the number of lcores (" + std::to_string(n_lcores) +
              "): every core transmits on a queue of its own";
    return false;
  }
  return true;
}

// A frame spread over several memif descriptors can be merged with a stale one by the
// 22.11 PMD (see vdev_args in eal_args.hpp): refuse a bsize that would.
bool check_memif_bsize(PortSetup& s) {
  const auto& pc = s.pc;
  uint32_t bsize = devarg_u32(pc.device, "bsize");
  if (!s.memif || bsize == 0 || bsize >= pc.mtu + 14) return true;
  s.error = s.key + ": memif bsize=" + std::to_string(bsize) + " is below the " +
            std::to_string(pc.mtu + 14) + "-byte frame of mtu " + std::to_string(pc.mtu) +
            ": DPDK 22.11's memif merges frames that span several buffers with stale ring "
            "slots (stalled, corrupted transfers); leave bsize out or set it to at least " +
            std::to_string(memif_buffer_size(pc.mtu));
  return false;
}

// l4_checksums: off is for a link whose frames cannot be corrupted: memif's shared memory.
// Anywhere else a peer's (or the wire's) bit errors would go undetected, or a Linux peer
// would drop every segment.
bool check_l4_checksums(PortSetup& s) {
  if (s.pc.l4_checksums == config::L4Checksums::on || s.memif) return true;
  s.error = s.key +
            ": l4_checksums: off is for net_memif ports only (shared memory, where no "
            "bit is flipped); this port's driver is " +
            s.out.driver + ", whose peer needs TCP and UDP checksums";
  return false;
}

// MTU. Some virtual devices (af_packet, tap in DPDK 22.11) refuse MTUs above 1500 in
// configure and set_mtu although af_packet carries larger frames when the kernel
// interface allows them. Those (and memif, see probe) get the device maximum and the
// stack keeps the configured MTU; every other device must accept the MTU or start fails.
bool choose_mtu(PortSetup& s) {
  const auto& pc = s.pc;
  const auto& info = s.info;
  s.dev_mtu = pc.mtu;
  // A driver that leaves max_mtu at UINT16_MAX (af_packet) is still bounded by
  // max_rx_pktlen in rte_eth_dev_configure, less ethdev's default overhead.
  uint32_t max_mtu = info.max_mtu;
  constexpr uint32_t kEthOverhead = RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
  if (info.max_mtu == UINT16_MAX && info.max_rx_pktlen > kEthOverhead) {
    max_mtu = std::min<uint32_t>(max_mtu, info.max_rx_pktlen - kEthOverhead);
  }
  if (pc.mtu > max_mtu && (s.af_packet || s.memif)) {
    s.dev_mtu = max_mtu;
    s.out.note +=
        "device refuses MTU " + std::to_string(pc.mtu) + " (max " + std::to_string(max_mtu) +
        "); " +
        (s.af_packet ? "af_packet carries it anyway when the kernel interface's MTU allows"
                     : "memif carries it anyway, one " +
                           std::to_string(devarg_u32(vdev_args(pc), "bsize")) +
                           "-byte memif buffer per frame") +
        "; ";
  } else if (pc.mtu > max_mtu || pc.mtu < info.min_mtu) {
    s.error = s.key + ": mtu " + std::to_string(pc.mtu) + " is outside what device " +
              s.out.device + " accepts (" + std::to_string(info.min_mtu) + ".." +
              std::to_string(max_mtu) + ")";
    return false;
  }
  s.out.device_mtu = s.dev_mtu;
  s.out.max_frame = pc.mtu + 14;
  s.conf.rxmode.mtu = s.dev_mtu;
  return true;
}

// Checksum offloads: use what the port has unless the config forces software. With
// l4_checksums: off, TCP and UDP are treated as offloaded on send (the stack writes the
// pseudo-header sum and the port passes the frame on as it is) and as verified on receive
// (Pipeline marks each frame), as a veth pair treats its frames; the IPv4 header's checksum
// is still computed and verified.
void choose_checksum_offloads(PortSetup& s) {
  PortInfo& out = s.out;
  if (s.pc.l4_checksums == config::L4Checksums::off) {
    out.l4_checksums_off = true;
    out.tx_offloads.udp_cksum = true;
    out.tx_offloads.tcp_cksum = true;
    out.note += "TCP/UDP checksums off (l4_checksums: off), neither computed nor verified; ";
    return;
  }
  if (s.software) return;
  const uint64_t tx_capa = s.info.tx_offload_capa;
  out.tx_offloads.ipv4_cksum = (tx_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) != 0;
  out.tx_offloads.udp_cksum = (tx_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0;
  out.tx_offloads.tcp_cksum = (tx_capa & RTE_ETH_TX_OFFLOAD_TCP_CKSUM) != 0;
  s.conf.txmode.offloads = tx_capa & (RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM |
                                      RTE_ETH_TX_OFFLOAD_TCP_CKSUM);
  uint64_t rx = s.info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_CHECKSUM;
  out.rx_cksum = rx != 0;
  s.conf.rxmode.offloads = rx;
}

// Frame buffers: one mbuf per frame, or chains of standard mbufs. Whole-frame mbufs cost
// one copy-free buffer per frame but a pool of large buffers; chains keep the pool small
// and need RX scatter and TX multi-segment.
bool choose_frame_buffers(PortSetup& s) {
  PortInfo& out = s.out;
  const uint64_t rx_capa = s.info.rx_offload_capa;
  const bool can_scatter = (rx_capa & RTE_ETH_RX_OFFLOAD_SCATTER) != 0 || s.memif;
  out.tx_chains = (s.info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0;
  constexpr uint32_t kStdRoom = RTE_MBUF_DEFAULT_DATAROOM;
  const bool fits_std = out.max_frame + 4 <= kStdRoom && !s.af_packet;
  switch (s.pc.frame_buffers) {
    case config::FrameBuffers::whole:
      out.chained = false;
      break;
    case config::FrameBuffers::chained:
      if (!out.tx_chains || (!fits_std && !can_scatter)) {
        s.error = s.key +
                  ": frame_buffers: chained needs RX scatter and TX multi-segment support; " +
                  out.driver + " offers" + (can_scatter ? "" : " no RX scatter") +
                  (out.tx_chains ? "" : " no TX multi-segment") + " (use whole or auto)";
        return false;
      }
      out.chained = true;
      break;
    case config::FrameBuffers::automatic:
      out.chained = !fits_std && can_scatter && out.tx_chains;
      break;
  }
  if (out.chained && (rx_capa & RTE_ETH_RX_OFFLOAD_SCATTER) != 0)
    s.conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
  if (out.tx_chains) s.conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  uint32_t room = kStdRoom;
  if (!out.chained) {
    room = std::max<uint32_t>(kStdRoom, out.max_frame + 4);
    if (s.af_packet) room = std::max(room, af_packet_framesz(s.pc.device) - 32);
    room = (room + 63) & ~63u;
  }
  out.data_room = room;
  out.note += std::string("frame buffers ") + (out.chained ? "chained" : "whole") + " (" +
              std::to_string(room) + "-byte mbufs" +
              (out.chained ? ", RX scatter, TX multi-segment" : "") + "); ";
  return true;
}

// TSO: the port cuts super-segments and recomputes both checksums of every segment, so
// it needs checksum offload and chains (a super-segment is up to 64 KiB). A device that
// bounds the segments per packet bounds the size.
void choose_tso(PortSetup& s) {
  PortInfo& out = s.out;
  const uint64_t tx_capa = s.info.tx_offload_capa;
  const uint64_t tso_needs =
      RTE_ETH_TX_OFFLOAD_TCP_TSO | RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_TCP_CKSUM;
  if (!s.software && s.pc.tso == config::Tso::automatic && (tx_capa & tso_needs) == tso_needs &&
      out.tx_chains) {
    uint32_t max = 65535;
    uint32_t segs = s.info.tx_desc_lim.nb_seg_max;
    const uint32_t room = out.data_room;
    if (segs != 0) max = std::min<uint32_t>(max, segs * room > 14 ? segs * room - 14 : 0);
    if (max > out.mtu) {
      out.tso = true;
      out.tx_offloads.tcp_tso = true;
      out.tx_offloads.tso_max = max;
      // net_tap (22.11) refuses a super-segment whose tso_segsz plus all headers,
      // Ethernet included, exceeds its MTU: its segments end 14 bytes short.
      if (out.driver == "net_tap") out.tx_offloads.tso_segment_frame_max = s.dev_mtu;
      s.conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_TCP_TSO;
    }
  }
  out.note += out.tso ? "TSO on, super-segments up to " + std::to_string(out.tx_offloads.tso_max) +
                            " bytes; "
                      : std::string("TSO off (") +
                            (s.software                           ? "offloads: software"
                             : s.pc.tso == config::Tso::off       ? "tso: off"
                             : (tx_capa & tso_needs) != tso_needs ? "the port has none"
                                                                  : "no TX multi-segment") +
                            "); ";
}

void choose_rss(PortSetup& s) {
  if (s.pc.rx_queues <= 1) return;
  uint64_t hf =
      (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) & s.info.flow_type_rss_offloads;
  if (hf != 0) {
    s.conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    s.conf.rx_adv_conf.rss_conf.rss_hf = hf;
    s.out.rss = true;
  } else {
    s.out.note += "no RSS on this device: flows are spread by the device's default; ";
  }
}

// Configure: everything decided before the device is touched.
bool configure(PortSetup& s) {
  if (!check_memif_bsize(s) || !check_l4_checksums(s) || !choose_mtu(s)) return false;
  choose_checksum_offloads(s);
  if (!choose_frame_buffers(s)) return false;
  choose_tso(s);
  choose_rss(s);
  return true;
}

bool create_pool(PortSetup& s) {
  const auto& pc = s.pc;
  PortInfo& out = s.out;
  std::string pool_name = "ws_pool_" + std::to_string(out.port_id);
  uint32_t n =
      std::max<uint32_t>(s.cfg.dataplane.mbufs, (pc.rx_descriptors * pc.rx_queues) +
                                                    (pc.tx_descriptors * pc.tx_queues) + 512);
  out.pool = rte_pktmbuf_pool_create(
      pool_name.c_str(), n, 256, 0,
      static_cast<uint16_t>(std::min<uint32_t>(out.data_room + RTE_PKTMBUF_HEADROOM, 65535)),
      rte_eth_dev_socket_id(out.port_id));
  if (out.pool == nullptr) {
    s.error = s.key + ": cannot create a pool of " + std::to_string(n) + " mbufs of " +
              std::to_string(out.data_room) + " bytes: " + rte_strerror(rte_errno) +
              " (raise dataplane.memory_mb or lower dataplane.mbufs)";
    return false;
  }
  out.pool_size = n;
  return true;
}

// After the pool exists every failure closes the device and frees the pool.
bool fail(PortSetup& s, const std::string& what, int rc) {
  s.error = s.key + ": " + what + ": " + err_str(rc);
  port_teardown(s.out);
  return false;
}

// Queues: configure the device, then its RX and TX queues, then its MTU.
bool setup_queues(PortSetup& s) {
  const auto& pc = s.pc;
  const uint16_t pid = s.out.port_id;
  int rc = rte_eth_dev_configure(pid, pc.rx_queues, pc.tx_queues, &s.conf);
  if (rc != 0) {
    // The usual cause with a valid config is a frame size the device cannot
    // take (memif and tap in DPDK 22.11 stop at 1518/1522 bytes): name the key.
    return fail(s,
                "rte_eth_dev_configure failed (mtu " + std::to_string(pc.mtu) +
                    ": the device takes frames up to " + std::to_string(s.info.max_rx_pktlen) +
                    " bytes)",
                rc);
  }
  uint16_t nrx = pc.rx_descriptors;
  uint16_t ntx = pc.tx_descriptors;
  rc = rte_eth_dev_adjust_nb_rx_tx_desc(pid, &nrx, &ntx);
  if (rc != 0) return fail(s, "cannot adjust descriptor counts", rc);
  int socket = rte_eth_dev_socket_id(pid);
  for (uint16_t q = 0; q < pc.rx_queues; ++q) {
    rte_eth_rxconf rxc = s.info.default_rxconf;
    rxc.offloads = s.conf.rxmode.offloads;
    rc = rte_eth_rx_queue_setup(pid, q, nrx, socket, &rxc, s.out.pool);
    if (rc != 0) return fail(s, "rx queue " + std::to_string(q) + " setup failed", rc);
  }
  for (uint16_t q = 0; q < pc.tx_queues; ++q) {
    rte_eth_txconf txc = s.info.default_txconf;
    txc.offloads = s.conf.txmode.offloads;
    rc = rte_eth_tx_queue_setup(pid, q, ntx, socket, &txc);
    if (rc != 0) return fail(s, "tx queue " + std::to_string(q) + " setup failed", rc);
  }
  // af_packet's set_mtu writes the kernel interface's MTU (SIOCSIFMTU): with the
  // capped device MTU it would shrink a jumbo veth to 1500 and the kernel would
  // drop every larger frame. Leave the interface's MTU as the operator set it.
  if (s.dev_mtu == pc.mtu || !(s.af_packet || s.memif)) {
    rc = rte_eth_dev_set_mtu(pid, static_cast<uint16_t>(s.dev_mtu));
    if (rc != 0 && rc != -ENOTSUP)
      return fail(s, "rte_eth_dev_set_mtu(" + std::to_string(s.dev_mtu) + ") failed", rc);
  }
  return true;
}

// Start: the MAC address, the device, promiscuous mode and the RSS table.
bool start(PortSetup& s) {
  PortInfo& out = s.out;
  const uint16_t pid = out.port_id;
  if (s.pc.mac) {
    out.mac = *s.pc.mac;
    rte_ether_addr a{};
    std::memcpy(a.addr_bytes, out.mac.b.data(), 6);
    // Not every virtual device can change its address; promiscuous mode below
    // still delivers frames for the configured one.
    (void)rte_eth_dev_default_mac_addr_set(pid, &a);
  } else {
    rte_ether_addr a{};
    int rc = rte_eth_macaddr_get(pid, &a);
    if (rc != 0) return fail(s, "cannot read the MAC address", rc);
    std::memcpy(out.mac.b.data(), a.addr_bytes, 6);
  }
  int rc = rte_eth_dev_start(pid);
  if (rc != 0) return fail(s, "rte_eth_dev_start failed", rc);
  // The stack filters by destination MAC itself; promiscuous mode lets a
  // configured MAC work on devices that cannot program it.
  (void)rte_eth_promiscuous_enable(pid);
  if (auto n = ipv6_multicast_filter(s.cfg, s.pc, pid, out.mac); !n.empty()) out.note += n + "; ";
  if (out.rss) rss_read(pid, out.rss_table, out.note);
  if (out.note.size() >= 2 && out.note.compare(out.note.size() - 2, 2, "; ") == 0)
    out.note.resize(out.note.size() - 2);
  return true;
}

}  // namespace

bool port_setup(const config::Config& cfg, size_t index, PortInfo& out, std::string& error) {
  const auto& pc = cfg.ports[index];
  PortSetup s{cfg, pc, out, error, "ports[" + std::to_string(index) + "] (" + pc.name + ")"};
  return probe(s) && configure(s) && create_pool(s) && setup_queues(s) && start(s);
}

void port_teardown(PortInfo& p) {
  if (p.pool == nullptr) return;
  rte_eth_dev_stop(p.port_id);
  rte_eth_dev_close(p.port_id);
  rte_mempool_free(p.pool);
  p.pool = nullptr;
}

}  // namespace ws::dp
