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

}  // namespace

bool port_setup(const config::Config& cfg, size_t index, PortInfo& out, std::string& error) {
  const auto& pc = cfg.ports[index];
  const std::string key = "ports[" + std::to_string(index) + "] (" + pc.name + ")";
  out.name = pc.name;
  out.device = port_device_name(pc);
  out.mtu = pc.mtu;
  out.rx_queues = pc.rx_queues;
  out.tx_queues = pc.tx_queues;

  uint16_t pid = 0;
  if (rte_eth_dev_get_port_by_name(out.device.c_str(), &pid) != 0) {
    error =
        key + ": device '" + out.device + "' did not appear (check the vdev string or PCI address)";
    return false;
  }
  out.port_id = pid;
  rte_eth_dev_info info{};
  int rc = rte_eth_dev_info_get(pid, &info);
  if (rc != 0) {
    error = key + ": cannot read device info: " + err_str(rc);
    return false;
  }
  out.driver = info.driver_name != nullptr ? info.driver_name : "";
  if (pc.rx_queues > info.max_rx_queues || pc.tx_queues > info.max_tx_queues) {
    error = key + ": rx_queues/tx_queues " + std::to_string(pc.rx_queues) + "/" +
            std::to_string(pc.tx_queues) + " exceed the device's " +
            std::to_string(info.max_rx_queues) + "/" + std::to_string(info.max_tx_queues);
    return false;
  }
  // Every core transmits on a TX queue of its own (a queue has one writer): with several
  // cores each owns flows on every port, its own connections and those handed to it.
  size_t n_lcores = cfg.dataplane.lcores.size();
  if (pc.tx_queues < n_lcores) {
    error = key + ": tx_queues (" + std::to_string(pc.tx_queues) +
            ") must be at least the number of lcores (" + std::to_string(n_lcores) +
            "): every core transmits on a queue of its own";
    return false;
  }

  // MTU. Some virtual devices (af_packet, tap in DPDK 22.11) refuse MTUs above 1500
  // in configure and set_mtu although af_packet carries larger frames when the
  // kernel interface allows them. Those get the device maximum and the stack keeps
  // the configured MTU; every other device must accept the MTU or start fails.
  uint32_t dev_mtu = pc.mtu;
  bool af_packet = out.driver == "net_af_packet";
  // memif (DPDK 22.11) reports a 1518-byte frame limit, which ethdev enforces in
  // configure, but its datapath has no length check: it copies a frame of up to
  // `bsize` bytes into one ring buffer (eal_args sets bsize to hold the MTU's frame)
  // and RX gathers it into an mbuf chain.
  bool memif = out.driver == "net_memif";
  if (memif) {
    // A frame spread over several memif descriptors can be merged with a stale one
    // by the 22.11 PMD (see vdev_args in eal_args.hpp): refuse a bsize that would.
    uint32_t bsize = devarg_u32(pc.device, "bsize");
    if (bsize != 0 && bsize < pc.mtu + 14) {
      error = key + ": memif bsize=" + std::to_string(bsize) + " is below the " +
              std::to_string(pc.mtu + 14) + "-byte frame of mtu " + std::to_string(pc.mtu) +
              ": DPDK 22.11's memif merges frames that span several buffers with stale ring "
              "slots (stalled, corrupted transfers); leave bsize out or set it to at least " +
              std::to_string(memif_buffer_size(pc.mtu));
      return false;
    }
  }
  bool carries_larger = af_packet || memif;
  // A driver that leaves max_mtu at UINT16_MAX (af_packet) is still bounded by
  // max_rx_pktlen in rte_eth_dev_configure, less ethdev's default overhead.
  uint32_t max_mtu = info.max_mtu;
  constexpr uint32_t kEthOverhead = RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
  if (info.max_mtu == UINT16_MAX && info.max_rx_pktlen > kEthOverhead) {
    max_mtu = std::min<uint32_t>(max_mtu, info.max_rx_pktlen - kEthOverhead);
  }
  if (pc.mtu > max_mtu || pc.mtu < info.min_mtu) {
    if (carries_larger && pc.mtu > max_mtu) {
      dev_mtu = max_mtu;
      out.note += "device refuses MTU " + std::to_string(pc.mtu) + " (max " +
                  std::to_string(max_mtu) + "); " +
                  (af_packet ? "af_packet carries it anyway when the kernel interface's MTU allows"
                             : "memif carries it anyway, one " +
                                   std::to_string(devarg_u32(vdev_args(pc), "bsize")) +
                                   "-byte memif buffer per frame") +
                  "; ";
    } else {
      error = key + ": mtu " + std::to_string(pc.mtu) + " is outside what device " + out.device +
              " accepts (" + std::to_string(info.min_mtu) + ".." + std::to_string(max_mtu) + ")";
      return false;
    }
  }
  out.device_mtu = dev_mtu;
  out.max_frame = pc.mtu + 14;

  // Offloads: use what the port has unless the config forces software.
  bool sw = cfg.dataplane.offloads == config::Offloads::software;
  const uint64_t tx_capa = info.tx_offload_capa;
  const uint64_t rx_capa = info.rx_offload_capa;
  rte_eth_conf conf{};
  conf.rxmode.mtu = dev_mtu;
  if (!sw) {
    out.tx_offloads.ipv4_cksum = (tx_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) != 0;
    out.tx_offloads.udp_cksum = (tx_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0;
    out.tx_offloads.tcp_cksum = (tx_capa & RTE_ETH_TX_OFFLOAD_TCP_CKSUM) != 0;
    conf.txmode.offloads = tx_capa & (RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM |
                                      RTE_ETH_TX_OFFLOAD_TCP_CKSUM);
    uint64_t rx = rx_capa & RTE_ETH_RX_OFFLOAD_CHECKSUM;
    out.rx_cksum = rx != 0;
    conf.rxmode.offloads = rx;
  }

  // Frame buffers: one mbuf per frame, or chains of standard mbufs. Whole-frame
  // mbufs cost one copy-free buffer per frame but a pool of large buffers;
  // chains keep the pool small and need RX scatter and TX multi-segment.
  const bool can_scatter = (rx_capa & RTE_ETH_RX_OFFLOAD_SCATTER) != 0 || memif;
  out.tx_chains = (tx_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0;
  constexpr uint32_t kStdRoom = RTE_MBUF_DEFAULT_DATAROOM;
  const bool fits_std = out.max_frame + 4 <= kStdRoom && !af_packet;
  switch (pc.frame_buffers) {
    case config::FrameBuffers::whole:
      out.chained = false;
      break;
    case config::FrameBuffers::chained:
      if (!out.tx_chains || (!fits_std && !can_scatter)) {
        error = key + ": frame_buffers: chained needs RX scatter and TX multi-segment support; " +
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
    conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
  if (out.tx_chains) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;

  uint32_t room = kStdRoom;
  if (!out.chained) {
    room = std::max<uint32_t>(kStdRoom, out.max_frame + 4);
    if (af_packet) room = std::max(room, af_packet_framesz(pc.device) - 32);
    room = (room + 63) & ~63u;
  }
  out.data_room = room;

  // TSO: the port cuts super-segments and recomputes both checksums of every
  // segment, so it needs checksum offload and chains (a super-segment is up to
  // 64 KiB). A device that bounds the segments per packet bounds the size.
  const uint64_t tso_needs =
      RTE_ETH_TX_OFFLOAD_TCP_TSO | RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_TCP_CKSUM;
  if (!sw && pc.tso == config::Tso::automatic && (tx_capa & tso_needs) == tso_needs &&
      out.tx_chains) {
    uint32_t max = 65535;
    uint32_t segs = info.tx_desc_lim.nb_seg_max;
    if (segs != 0) max = std::min<uint32_t>(max, segs * room > 14 ? segs * room - 14 : 0);
    if (max > out.mtu) {
      out.tso = true;
      out.tx_offloads.tcp_tso = true;
      out.tx_offloads.tso_max = max;
      // net_tap (22.11) refuses a super-segment whose tso_segsz plus all headers,
      // Ethernet included, exceeds its MTU: its segments end 14 bytes short.
      if (out.driver == "net_tap") out.tx_offloads.tso_segment_frame_max = dev_mtu;
      conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_TCP_TSO;
    }
  }
  out.note += std::string("frame buffers ") + (out.chained ? "chained" : "whole") + " (" +
              std::to_string(room) + "-byte mbufs" +
              (out.chained ? ", RX scatter, TX multi-segment" : "") + "); ";
  out.note += out.tso ? "TSO on, super-segments up to " + std::to_string(out.tx_offloads.tso_max) +
                            " bytes; "
                      : std::string("TSO off (") +
                            (sw                                   ? "offloads: software"
                             : pc.tso == config::Tso::off         ? "tso: off"
                             : (tx_capa & tso_needs) != tso_needs ? "the port has none"
                                                                  : "no TX multi-segment") +
                            "); ";
  if (pc.rx_queues > 1) {
    uint64_t hf =
        (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) & info.flow_type_rss_offloads;
    if (hf != 0) {
      conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
      conf.rx_adv_conf.rss_conf.rss_hf = hf;
      out.rss = true;
    } else {
      out.note += "no RSS on this device: flows are spread by the device's default; ";
    }
  }

  std::string pool_name = "ws_pool_" + std::to_string(pid);
  uint32_t n =
      std::max<uint32_t>(cfg.dataplane.mbufs, (pc.rx_descriptors * pc.rx_queues) +
                                                  (pc.tx_descriptors * pc.tx_queues) + 512);
  out.pool = rte_pktmbuf_pool_create(
      pool_name.c_str(), n, 256, 0,
      static_cast<uint16_t>(std::min<uint32_t>(room + RTE_PKTMBUF_HEADROOM, 65535)),
      rte_eth_dev_socket_id(pid));
  if (out.pool == nullptr) {
    error = key + ": cannot create a pool of " + std::to_string(n) + " mbufs of " +
            std::to_string(room) + " bytes: " + rte_strerror(rte_errno) +
            " (raise dataplane.memory_mb or lower dataplane.mbufs)";
    return false;
  }
  out.pool_size = n;

  auto fail = [&](const std::string& what, int r) {
    error = key + ": " + what + ": " + err_str(r);
    rte_eth_dev_stop(pid);
    rte_eth_dev_close(pid);
    rte_mempool_free(out.pool);
    out.pool = nullptr;
    return false;
  };
  rc = rte_eth_dev_configure(pid, pc.rx_queues, pc.tx_queues, &conf);
  if (rc != 0) {
    // The usual cause with a valid config is a frame size the device cannot
    // take (memif and tap in DPDK 22.11 stop at 1518/1522 bytes): name the key.
    return fail("rte_eth_dev_configure failed (mtu " + std::to_string(pc.mtu) +
                    ": the device takes frames up to " + std::to_string(info.max_rx_pktlen) +
                    " bytes)",
                rc);
  }
  uint16_t nrx = pc.rx_descriptors;
  uint16_t ntx = pc.tx_descriptors;
  rc = rte_eth_dev_adjust_nb_rx_tx_desc(pid, &nrx, &ntx);
  if (rc != 0) return fail("cannot adjust descriptor counts", rc);
  int socket = rte_eth_dev_socket_id(pid);
  for (uint16_t q = 0; q < pc.rx_queues; ++q) {
    rte_eth_rxconf rxc = info.default_rxconf;
    rxc.offloads = conf.rxmode.offloads;
    rc = rte_eth_rx_queue_setup(pid, q, nrx, socket, &rxc, out.pool);
    if (rc != 0) return fail("rx queue " + std::to_string(q) + " setup failed", rc);
  }
  for (uint16_t q = 0; q < pc.tx_queues; ++q) {
    rte_eth_txconf txc = info.default_txconf;
    txc.offloads = conf.txmode.offloads;
    rc = rte_eth_tx_queue_setup(pid, q, ntx, socket, &txc);
    if (rc != 0) return fail("tx queue " + std::to_string(q) + " setup failed", rc);
  }
  // af_packet's set_mtu writes the kernel interface's MTU (SIOCSIFMTU): with the
  // capped device MTU it would shrink a jumbo veth to 1500 and the kernel would
  // drop every larger frame. Leave the interface's MTU as the operator set it.
  if (dev_mtu == pc.mtu || !carries_larger) {
    rc = rte_eth_dev_set_mtu(pid, static_cast<uint16_t>(dev_mtu));
    if (rc != 0 && rc != -ENOTSUP)
      return fail("rte_eth_dev_set_mtu(" + std::to_string(dev_mtu) + ") failed", rc);
  }

  if (pc.mac) {
    out.mac = *pc.mac;
    rte_ether_addr a{};
    std::memcpy(a.addr_bytes, out.mac.b.data(), 6);
    // Not every virtual device can change its address; promiscuous mode below
    // still delivers frames for the configured one.
    (void)rte_eth_dev_default_mac_addr_set(pid, &a);
  } else {
    rte_ether_addr a{};
    rc = rte_eth_macaddr_get(pid, &a);
    if (rc != 0) return fail("cannot read the MAC address", rc);
    std::memcpy(out.mac.b.data(), a.addr_bytes, 6);
  }
  rc = rte_eth_dev_start(pid);
  if (rc != 0) return fail("rte_eth_dev_start failed", rc);
  // The stack filters by destination MAC itself; promiscuous mode lets a
  // configured MAC work on devices that cannot program it.
  (void)rte_eth_promiscuous_enable(pid);
  if (auto n = ipv6_multicast_filter(cfg, pc, pid, out.mac); !n.empty()) out.note += n + "; ";
  if (out.rss) rss_read(pid, out.rss_table, out.note);
  if (out.note.size() >= 2 && out.note.compare(out.note.size() - 2, 2, "; ") == 0)
    out.note.resize(out.note.size() - 2);
  return true;
}

void port_teardown(PortInfo& p) {
  if (p.pool == nullptr) return;
  rte_eth_dev_stop(p.port_id);
  rte_eth_dev_close(p.port_id);
  rte_mempool_free(p.pool);
  p.pool = nullptr;
}

}  // namespace ws::dp
