// The data plane's clock: the TSC, converted to the stack's Instant. Only
// dataplane/ reads a clock; the stack receives `now` as a parameter.
#pragma once

#include <rte_cycles.h>

#include <cstdint>

#include "stack/core/time.hpp"

namespace ws::dp {

class TscClock {
 public:
  TscClock() : hz_(rte_get_tsc_hz()), origin_(rte_rdtsc()) {}
  Instant now() const { return to_instant(rte_rdtsc()); }
  Instant to_instant(uint64_t tsc) const {
    unsigned __int128 d = tsc - origin_;
    return Instant::from_ns(static_cast<uint64_t>(d * 1000000000u / hz_));
  }
  uint64_t hz() const { return hz_; }

 private:
  uint64_t hz_;
  uint64_t origin_;
};

}  // namespace ws::dp
