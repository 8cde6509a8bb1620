// A service runs on every data-plane core, on the stack's own socket API. Its
// counters are plain per-core integers that the data plane publishes.
#pragma once

#include <cstdint>
#include <string>

#include "stack/core/latency_histogram.hpp"
#include "stack/core/time.hpp"
#include "stack/pipeline/tx_pipeline.hpp"

namespace ws {

class Stack;

struct alignas(64) ServiceCounters {
  uint64_t rx_bytes = 0;
  uint64_t tx_bytes = 0;
  uint64_t rx_messages = 0;
  uint64_t tx_messages = 0;
  uint64_t send_failures = 0;  // datagrams or bytes that could not be sent
  uint64_t connections = 0;    // TCP connections accepted/opened
};

// What a client service (source, ping) reports: a progress line each second and
// a final summary (docs/framing.md: messages, bytes, seconds, rates, RTT percentiles).
struct ClientReport {
  bool final = false;
  double seconds = 0;     // since the client started
  uint64_t messages = 0;  // totals so far
  uint64_t bytes = 0;     // payload bytes
  // Final: over the whole run. Progress: over the last interval.
  double messages_per_second = 0;
  double bits_per_second = 0;
  uint64_t connections = 0;  // connections opened successfully
  double connections_per_second = 0;
  uint64_t connect_failures = 0;
  uint64_t errors = 0;  // resets, timeouts, verification failures, lost datagrams
  bool has_rtt = false;
  uint64_t rtt_ns[5] = {};  // p50 p90 p99 p99.9 max

  void set_rtt(const LatencyHistogram& h) {
    has_rtt = h.count() > 0;
    rtt_ns[0] = h.quantile(0.50);
    rtt_ns[1] = h.quantile(0.90);
    rtt_ns[2] = h.quantile(0.99);
    rtt_ns[3] = h.quantile(0.999);
    rtt_ns[4] = h.max();
  }
};

class Service {
 public:
  explicit Service(std::string name) : name_(std::move(name)) {}
  virtual ~Service() = default;
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Binds sockets; false when the port is taken.
  virtual bool start(Stack& stack, Instant now) = 0;
  // Timers and progress of the service; returns its next deadline.
  virtual Instant poll(Instant now) {
    (void)now;
    return Instant::never();
  }
  // Stops accepting and closes what it opened.
  virtual void stop(Instant now) { (void)now; }

  // Client services: fills `out` and returns true when a report is due (one each
  // second, then the final one once).
  virtual bool report(Instant now, ClientReport& out) {
    (void)now, (void)out;
    return false;
  }
  virtual bool is_client() const { return false; }
  // A client that has sent its final report.
  virtual bool finished() const { return false; }
  // Round-trip times (ping), for the wirespeed_ping_rtt_seconds histogram.
  virtual const LatencyHistogram* rtt() const { return nullptr; }
  // Adds the TX pipeline counters of every connection, live and closed, to `into`
  // (services that use the batch pipeline; the totals never go backwards).
  virtual void add_pipeline_counters(pipeline::PipelineCounters& into) const { (void)into; }

  const std::string& name() const { return name_; }
  const ServiceCounters& counters() const { return counters_; }

 protected:
  ServiceCounters counters_;

 private:
  std::string name_;
};

}  // namespace ws
