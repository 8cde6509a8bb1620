// The data plane's metrics: registered once in the stats segment at start, then
// each core copies its plain counters (stack, drops, services) into its own
// block on a deadline and publishes it. Names: docs/metrics.md.
#pragma once

#include <rte_ethdev.h>

#include <array>
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
#include "dataplane/unmap_guard.hpp"
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
  // The core's stack, the interface index of each port (same order) and the time of the
  // sample: IPv6 address states and the default router are read from it.
  const Stack* net = nullptr;
  std::vector<uint16_t> ifaces;
  Instant now;
  uint64_t busy_ns = 0;
  uint64_t idle_ns = 0;
  uint64_t loops = 0;
  uint64_t rx_bursts = 0;
};

// A counter kept per address family and the series it is exported as: its total (when
// it has one) and one series per family (metrics.cpp, FamilySeries).
template <class Source>
struct FamilySlot {
  FamilyCount Source::*field;
  std::optional<stats::Slot> total;
  std::array<stats::Slot, kFamilies> by;
};
template <class Source>
using FamilySlots = std::vector<FamilySlot<Source>>;

// What the core-labelled series of one core show (update_core fills it from a sample).
struct CoreTotals {
  uint64_t busy_ns, idle_ns, loops, frames, connections, handed_out, handed_in;
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
  // Series that copy a uint64_t field of a source struct, with the slot each writes.
  template <class Source>
  using FieldSlots = std::vector<std::pair<uint64_t Source::*, stats::Slot>>;
  struct PortSlots {
    FieldSlots<rte_eth_stats> eth;  // rte_eth_stats_get counters
    stats::Slot mtu, link_up, pool_in_use, pool_size;
    std::vector<stats::Slot> q_rx_packets, q_tx_packets;
    // af_packet ports: the kernel's ring-full drops, added to rx_missed.
    std::shared_ptr<AfPacketDrops> kernel_drops;
    // TCP/UDP checksum failures (per core) and, for af_packet ports, the explanation
    // logged once and flagged when they first appear (checksum_hint.hpp).
    stats::Slot l4_errors, l4_hint;
    std::string iface, hint;
    bool hint_given = false;
    // IPv6 (ports that run it): the addresses (link-local first); per DAD state, how many
    // are in it and which (a bit mask in that order); the learned router's identifier.
    std::vector<Ipv6Addr> v6_addrs;
    std::array<stats::Slot, 3> v6_count{}, v6_mask{};
    stats::Slot v6_router;
    bool v6 = false;
  };
  struct ServiceSlots {
    FieldSlots<ServiceCounters> fields;
    std::optional<stats::Slot> rtt;
  };
  // One SA: its packets and bytes, and the error reasons of its direction.
  struct SaSlots {
    ipsec::Direction direction = ipsec::Direction::outbound;
    stats::Slot packets, bytes;
    std::vector<std::pair<ipsec::SaError, stats::Slot>> errors;
  };
  class Registrar;  // metrics.cpp: registers series and remembers any refusal
  void register_port(Registrar& r, const config::Config& cfg, const PortInfo& p);
  void register_core_series(Registrar& r);
  void register_ipv6(Registrar& r, const config::Config& cfg, const PortInfo& p, PortSlots& ps);
  void update_ipv6(uint64_t* v, uint32_t core, const CoreSample& s) const;
  void register_service(Registrar& r, const config::ServiceConfig& s);
  bool register_ipsec(const config::Config& cfg, std::string& error);
  void update_port(uint64_t* g, size_t i, const PortInfo& p);
  void update_service(uint64_t* v, const ServiceSlots& slots, const Service& svc) const;
  void update_ipsec(uint64_t* v, const ipsec::EspLayer& esp) const;
  std::optional<stats::Slot> reg(const std::string& name, const std::string& help,
                                 stats::MetricType t, std::vector<stats::LabelPair> labels,
                                 stats::Scope scope, std::string& error, double scale = 1.0);

  stats::Writer writer_;
  std::vector<PortSlots> ports_;
  // Set by any core whose stack counted a checksum failure on the port; read by the
  // main lcore, which logs and flags the hint (not on the per-packet path).
  std::unique_ptr<std::atomic<bool>[]> l4_seen_;
  std::vector<stats::Slot> drops_;  // by DropReason
  FieldSlots<StackCounters> stack_;
  std::vector<ServiceSlots> services_;
  std::vector<SaSlots> sas_;  // config order
  // Per core, labelled: time busy and idle, loop iterations, what the core's stack
  // received, the connections it opened and accepted, and the frames it handed to other
  // cores and took from them (steering.hpp).
  FieldSlots<CoreTotals> core_;
  std::vector<stats::Slot> tcp_states_;    // from tcp::TcpState::kSynSent on
  std::vector<stats::Slot> tcp_recovery_;  // by tcp::RecoveryKind
  FieldSlots<tcp::TcpCounters> tcp_;
  // By address family: UDP and TCP counters, and TCP connections by [state][family].
  FamilySlots<StackCounters> stack_family_;
  FamilySlots<tcp::TcpFamilyCounters> tcp_family_;
  std::vector<std::array<stats::Slot, kFamilies>> tcp_family_states_;  // from kSynSent on
  FieldSlots<ReassemblyStats> reasm_;
  // TX batch pipelines: counters summed over every connection of the core's services.
  FieldSlots<pipeline::PipelineCounters> pipeline_;
  stats::Slot pipeline_live_, pipeline_in_use_;
  FieldSlots<unmap_guard::Stats> unmap_;  // process-wide
};

}  // namespace ws::dp
