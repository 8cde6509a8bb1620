// Whether a core is behind its receive load: the signal that makes new SYNs wait their
// turn (TcpConfig::syn_burst_budget). Clock-free: the data plane passes each receive
// burst's fill, its ring size and the time.
#pragma once

#include <cstdint>

#include "stack/core/time.hpp"

namespace ws::tcp {

class OverloadGate {
 public:
  // Full bursts for at least this long...
  static constexpr Duration kMinTime = Duration::millis(2);
  // ...and over this many rings' worth of frames. A pause (the thread descheduled, a
  // stall) leaves at most one full ring behind, which is drained in about a ring of
  // frames when little more arrives meanwhile; if the ring still is not empty after k
  // rings, arrivals kept up with at least (1 - 1/k) of what the core processes for the
  // whole drain. Time alone cannot tell: a thread descheduled between two full bursts
  // sees milliseconds pass with one burst drained.
  static constexpr uint32_t kRings = 4;

  // One receive burst: `got` frames of at most `burst` from a ring of `ring` descriptors.
  void burst(uint32_t got, uint32_t burst, uint32_t ring, Instant now) {
    if (burst == 0 || got < burst) {
      since_ = Instant::never();
      frames_ = 0;
      return;
    }
    if (since_.is_never()) since_ = now;
    frames_ += got;
    need_ = static_cast<uint64_t>(ring) * kRings;
  }
  // The last burst was full and bursts have been full for kMinTime and kRings rings.
  bool behind(Instant now) const {
    return !since_.is_never() && frames_ >= need_ && now - since_ >= kMinTime;
  }

 private:
  Instant since_ = Instant::never();  // first of the current run of full bursts
  uint64_t frames_ = 0;               // frames received in that run
  uint64_t need_ = 0;                 // kRings rings of the queue being read
};

}  // namespace ws::tcp
