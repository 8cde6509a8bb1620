// One pipeline per lcore: rx_burst on the queues it owns -> the core's stack ->
// services -> TX bursts. Shared-nothing: everything here belongs to one core.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "control/config/config.hpp"
#include "dataplane/clock.hpp"
#include "dataplane/faults.hpp"
#include "dataplane/mbuf_io.hpp"
#include "dataplane/metrics.hpp"
#include "dataplane/port.hpp"
#include "dataplane/rx_holder.hpp"
#include "dataplane/unmap_guard.hpp"
#include "stack/apps/service.hpp"
#include "stack/iface/stack.hpp"
#include "stack/tcp/tcp_stack.hpp"
#include "stack/tcp/transport.hpp"

namespace ws::dp {

struct RxQueue {
  uint16_t port_id;
  uint16_t queue;
  uint16_t iface;  // interface index in this core's stack
};

class Pipeline {
 public:
  Pipeline(uint32_t core_index, const config::Config& cfg, const std::vector<PortInfo>& ports,
           Metrics& metrics, std::atomic<bool>& stop);
  ~Pipeline();

  // Binds services; false with `error` when one cannot start.
  bool start(std::string& error);
  // Runs until `stop` becomes true. Main-lcore duties (port counters) when `main`.
  void run(bool main);
  // Closes services and flushes what is left.
  void finish();

 private:
  void publish(Instant now, bool main);
  void idle_wait(Instant now, Instant next_deadline);
  void reports(Instant now);
  void print_report(const Service& s, const ClientReport& r);

  uint32_t core_;
  const config::Config& cfg_;
  const std::vector<PortInfo>& ports_;
  Metrics& metrics_;
  std::atomic<bool>& stop_;
  TscClock clock_;
  std::unique_ptr<ipsec::EspLayer> esp_;  // IPsec ESP, when the config has SAs; outlives stack_
  Stack stack_;
  MbufHolder holder_;  // before tcp_: TCP gives held mbufs back when destroyed
  tcp::TcpStack tcp_;
  tcp::TcpTransport tcp_transport_;
  FaultInjector faults_;
  std::vector<uint16_t> iface_of_port_;
  std::vector<std::unique_ptr<MbufIo>> ios_;
  std::vector<RxQueue> rxqs_;
  std::vector<std::unique_ptr<Service>> services_;
  CoreSample sample_;
  bool adaptive_;
  uint32_t empty_polls_ = 0;
  uint32_t sleep_us_ = 0;
  Instant next_reports_;
  bool has_servers_ = false;
  // Odd while an iteration of run() (or finish()) may be inside a burst: see
  // unmap_guard.hpp. Points at own_mark_ until run() attaches the core's thread.
  unmap_guard::CoreMark own_mark_;
  unmap_guard::CoreMark* mark_ = &own_mark_;
  bool attached_ = false;
};

}  // namespace ws::dp
