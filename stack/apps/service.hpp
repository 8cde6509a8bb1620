// A service runs on every data-plane core, on the stack's own socket API. Its
// counters are plain per-core integers that the data plane publishes.
#pragma once

#include <cstdint>
#include <string>

#include "stack/core/time.hpp"

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

  const std::string& name() const { return name_; }
  const ServiceCounters& counters() const { return counters_; }

 protected:
  ServiceCounters counters_;

 private:
  std::string name_;
};

}  // namespace ws
