// The data plane's metrics: registered once in the stats segment at start, then
// each core copies its plain counters (stack, drops, services) into its own
// block on a deadline and publishes it. Names: docs/metrics.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "control/config/config.hpp"
#include "control/stats/writer.hpp"
#include "dataplane/af_packet_drops.hpp"
#include "dataplane/port.hpp"
#include "dataplane/steering.hpp"
#include "stack/apps/service.hpp"
#include "stack/core/counters.hpp"
#include "stack/core/drops.hpp"
#include "stack/iface/stack.hpp"
#include "stack/ipsec/esp_layer.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws::dp {

struct CoreSample {
  const StackCounters* stack = nullptr;
  const DropCounters* drops = nullptr;
  const tcp::TcpStack* tcp = nullptr;
  const ReassemblyStats* reassembly = nullptr;
  const SteerOutbox* steer = nullptr;
  const ipsec::EspLayer* esp = nullptr;
  std::vector<const Service*> services;
  // Per port, in the order of the ports given to Metrics::init.
  std::vector<const InterfaceCounters*> ports;
  uint64_t busy_ns = 0;
  uint64_t idle_ns = 0;
  uint64_t loops = 0;
  uint64_t rx_bursts = 0;
};

class Metrics {
 public:
  // Registers everything and seals the segment; false with `error` on failure.
  bool init(const config::Config& cfg, const std::vector<PortInfo>& ports, std::string& error);
  // Per core, on its own thread.
  void update_core(uint32_t core, const CoreSample& s);
  // Port counters and mempool gauges, from the main lcore.
  void update_ports(const std::vector<PortInfo>& ports);
  void shutdown();
  bool enabled() const { return writer_.sealed(); }

 private:
  struct PortSlots {
    stats::Slot rx_packets, rx_bytes, tx_packets, tx_bytes, rx_missed, rx_errors, tx_errors,
        rx_nombuf, mtu, link_up, pool_in_use, pool_size;
    std::vector<stats::Slot> q_rx_packets, q_tx_packets;
    // af_packet ports: the kernel's ring-full drops, added to rx_missed.
    std::shared_ptr<AfPacketDrops> kernel_drops;
    // TCP/UDP checksum failures (per core) and, for af_packet ports, the explanation
    // logged once and flagged when they first appear (checksum_hint.hpp).
    stats::Slot l4_errors, l4_hint;
    std::string iface, hint;
    bool hint_given = false;
  };
  struct ServiceSlots {
    stats::Slot rx_bytes, tx_bytes, rx_msgs, tx_msgs, send_failures, connections;
    std::optional<stats::Slot> rtt;
  };
  // One SA: its packets and bytes, and the error reasons of its direction.
  struct SaSlots {
    ipsec::Direction direction = ipsec::Direction::outbound;
    stats::Slot packets, bytes;
    std::vector<std::pair<ipsec::SaError, stats::Slot>> errors;
  };
  bool register_ipsec(const config::Config& cfg, std::string& error);
  void update_ipsec(uint64_t* v, const ipsec::EspLayer& esp) const;
  std::optional<stats::Slot> reg(const std::string& name, const std::string& help,
                                 stats::MetricType t, std::vector<stats::LabelPair> labels,
                                 stats::Scope scope, std::string& error, double scale = 1.0);

  stats::Writer writer_;
  std::vector<PortSlots> ports_;
  // Set by any core whose stack counted a checksum failure on the port; read by the
  // main lcore, which logs and flags the hint (not on the per-packet path).
  std::unique_ptr<std::atomic<bool>[]> l4_seen_;
  std::vector<stats::Slot> drops_;
  std::vector<std::pair<size_t, stats::Slot>> stack_;  // offset into StackCounters, slot
  std::vector<ServiceSlots> services_;
  std::vector<SaSlots> sas_;  // config order
  stats::Slot busy_, idle_, loops_;
  // Per core, labelled: what the core's stack received, the connections it opened and
  // accepted, and the frames it handed to other cores and took from them (steering.hpp).
  stats::Slot core_frames_, core_connections_, core_handed_out_, core_handed_in_;
  std::vector<stats::Slot> tcp_states_;
  std::vector<stats::Slot> tcp_recovery_;  // by tcp::RecoveryKind
  stats::Slot tcp_retrans_;
  std::vector<std::pair<uint64_t tcp::TcpCounters::*, stats::Slot>> tcp_;
  std::vector<std::pair<uint64_t ReassemblyStats::*, stats::Slot>> reasm_;
  // TX batch pipelines: counters summed over every connection of the core's services.
  std::vector<std::pair<uint64_t pipeline::PipelineCounters::*, stats::Slot>> pipeline_;
  stats::Slot pipeline_live_, pipeline_in_use_;
  stats::Slot unmap_guarded_, unmap_waits_, unmap_timeouts_, unmap_wait_, unmap_wait_max_;
};

}  // namespace ws::dp
