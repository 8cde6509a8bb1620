// One ethdev port: mempool, queues, MTU, offloads. Owned by the main thread; the
// per-core pipelines use its queues.
#pragma once

#include <rte_mempool.h>

#include <cstdint>
#include <string>

#include "control/config/config.hpp"
#include "stack/core/addr.hpp"
#include "stack/core/packet.hpp"
#include "stack/steer/toeplitz.hpp"

namespace ws::dp {

struct PortInfo {
  std::string name;    // config name (label value)
  std::string device;  // ethdev name
  std::string driver;  // e.g. net_af_packet
  uint16_t port_id = 0;
  uint32_t mtu = 1500;      // configured MTU, the one the stack uses
  uint32_t device_mtu = 0;  // what the device accepted in rte_eth_dev_set_mtu
  uint32_t max_frame = 0;   // largest frame we send: MTU + Ethernet header (+ VLAN)
  uint32_t data_room = 0;   // mbuf data room (after headroom)
  MacAddr mac;
  TxOffloads tx_offloads;
  bool rx_cksum = false;  // RX checksum flags are reported
  // l4_checksums: off (memif only): TCP/UDP checksums neither computed nor verified.
  bool l4_checksums_off = false;
  bool chained = false;    // frames longer than one mbuf arrive and leave as chains
  bool tx_chains = false;  // the port takes multi-segment TX (jumbo and TSO frames)
  bool tso = false;        // TCP segmentation offload in use
  bool rss = false;
  RssTable rss_table;  // read from the device after start when `rss`
  uint16_t rx_queues = 1;
  uint16_t tx_queues = 1;
  rte_mempool* pool = nullptr;
  uint32_t pool_size = 0;
  std::string note;  // said at start: what was chosen and why
};

// Probes, configures and starts the port. On failure returns false with `error`
// naming the key and the cause; nothing is left started.
bool port_setup(const config::Config& cfg, size_t index, PortInfo& out, std::string& error);
void port_teardown(PortInfo& p);

}  // namespace ws::dp
