// The system clocks in nanoseconds, for the stats segment's heartbeats and timestamps and
// for packet-capture timestamps (stack/ reads no clock: its time comes as a parameter).
#pragma once

#include <time.h>

#include <cstdint>

namespace ws::stats {

inline uint64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace ws::stats
