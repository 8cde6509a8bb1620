// One pipeline per lcore: rx_burst on the queues it owns -> the core's stack ->
// services -> TX bursts. Shared-nothing: everything here belongs to one core.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "control/config/config.hpp"
#include "dataplane/capture.hpp"
#include "dataplane/client_reports.hpp"
#include "dataplane/clock.hpp"
#include "dataplane/faults.hpp"
#include "dataplane/idle_policy.hpp"
#include "dataplane/loop_time.hpp"
#include "dataplane/mbuf_io.hpp"
#include "dataplane/metrics.hpp"
#include "dataplane/port.hpp"
#include "dataplane/rx_frame.hpp"
#include "dataplane/rx_holder.hpp"
#include "dataplane/steering.hpp"
#include "dataplane/unmap_guard.hpp"
#include "stack/apps/service.hpp"
#include "stack/iface/stack.hpp"
#include "stack/iface/tcp_transport.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws::dp {

struct RxQueue {
  uint16_t port_id = 0;
  uint16_t queue = 0;
  uint16_t iface = 0;             // interface index in this core's stack
  uint32_t ring = 0;              // frames the queue's ring holds (rx_ring_frames)
  bool l4_checksums_off = false;  // the port's l4_checksums: off (frames marked verified)
};

// What the pipelines share, all set up by the main thread before they start.
struct PipelineShared {
  Metrics& metrics;
  Capture& capture;
  const Steering& steering;
  ClientReports& reports;
  std::atomic<bool>& stop;
};

class Pipeline {
 public:
  Pipeline(uint32_t core_index, const config::Config& cfg, const std::vector<PortInfo>& ports,
           PipelineShared shared);
  ~Pipeline();

  // Binds services; false with `error` when one cannot start.
  bool start(std::string& error);
  // Runs until `stop` becomes true. Main-lcore duties (port counters) when `main`.
  void run(bool main);
  // Closes services and flushes what is left.
  void finish();

 private:
  // The loop's own clocks (run() keeps them on its stack).
  struct LoopClock {
    Instant deadline = Instant::from_ns(0);  // the earliest timer of the stack and services
    Instant next_stats;
    Duration stats_every;
    LoopTime time;  // the clock read and the work of the iteration before
    uint32_t iter = 0;
  };
  // The steps of one iteration of run(), in order after poll_rx: inlined into the loop
  // (defined in pipeline.cpp, used only there), so naming them costs no calls.
  [[gnu::always_inline]] inline Instant run_timers(Instant now);
  [[gnu::always_inline]] inline bool transmit(Instant now);
  void pool_housekeeping();  // every 256 iterations: a call is fine
  [[gnu::always_inline]] inline void periodic(Instant now, bool main, LoopClock& loop);
  [[gnu::always_inline]] inline void book_time(Instant now, LoopClock& loop);
  uint32_t poll_rx(Instant now, rte_mbuf** mbufs, uint16_t burst, RxSegments& segs);
  static void mark_l4_verified(rte_mbuf** mbufs, uint16_t n);
  void deliver(rte_mbuf** mbufs, uint16_t n, uint16_t queue, bool watch, Instant now,
               RxSegments& segs);
  void receive_all(rte_mbuf** mbufs, uint16_t n, uint16_t queue, bool watch, Instant now,
                   RxSegments& segs);
  uint32_t take_handed(Instant now, rte_mbuf** mbufs, uint16_t burst, RxSegments& segs);
  bool client_share(size_t service, ClientShare& share) const;
  void receive(rte_mbuf* m, uint16_t iface, uint16_t queue, Instant now, RxSegments& segs);
  void receive_watched(rte_mbuf* m, uint16_t iface, uint16_t queue, Instant now, RxSegments& segs);
  void publish(Instant now, bool main);
  void idle_wait(Instant now, Instant next_deadline);
  void reports(Instant now);
  void print_report(const Service& s, const ClientReport& r);

  uint32_t core_;
  const config::Config& cfg_;
  const std::vector<PortInfo>& ports_;
  Metrics& metrics_;
  Capture& capture_;
  const Steering& steering_;
  ClientReports& client_reports_;
  std::atomic<bool>& stop_;
  TscClock clock_;
  std::unique_ptr<ipsec::EspLayer> esp_;  // IPsec ESP, when the config has SAs; outlives stack_
  Stack stack_;
  MbufHolder holder_;  // before tcp_: TCP gives held mbufs back when destroyed
  tcp::TcpStack tcp_;
  tcp::TcpTransport tcp_transport_;
  FaultInjector faults_;
  CaptureTap tap_;  // before ios_: each MbufIo points at it
  std::vector<uint16_t> iface_of_port_;
  std::vector<std::unique_ptr<MbufIo>> ios_;
  std::vector<RxQueue> rxqs_;
  SteerOutbox steer_;
  std::vector<rte_mbuf*> fault_batch_;
  std::vector<size_t> service_index_;  // services_[i] is cfg.services[service_index_[i]]
  std::vector<std::unique_ptr<Service>> services_;
  CoreSample sample_;
  bool adaptive_;
  IdlePolicy idle_;
  Instant next_reports_;
  bool has_servers_ = false;
  // Odd while an iteration of run() (or finish()) may be inside a burst: see
  // unmap_guard.hpp. Points at own_mark_ until run() attaches the core's thread.
  unmap_guard::CoreMark own_mark_;
  unmap_guard::CoreMark* mark_ = &own_mark_;
  bool attached_ = false;
};

}  // namespace ws::dp
