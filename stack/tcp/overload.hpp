// Whether a core is behind its receive load: the signal that makes new SYNs wait their
// turn (TcpConfig::syn_burst_budget), and whether a listener's handshakes complete in good
// time (TcpConfig::syn_shed_half_open). Clock-free: the data plane passes each receive
// burst's fill, its ring size and the time.
#pragma once

#include <algorithm>
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

// The handshakes a listener completes: with its half-open count, how long a handshake takes
// (Little's law: half-open = completions per second x seconds per handshake). More half-open
// connections than handshakes completed in kWindow means they take longer than kWindow on
// average: their SYNs or ACKs wait long or are lost, and a new SYN only adds to the pile.
// Fewer means they complete within kWindow, a small part of what a shed SYN costs its peer
// (the 1 s SYN timeout, RFC 6298 2.1): admitting it costs less than shedding it.
class HandshakeRate {
 public:
  static constexpr Duration kWindow = Duration::millis(100);

  void completed(Instant now) {
    roll(now);
    ++current_;
  }
  // Handshakes completed in the last one to two windows (the current one and the one before).
  uint32_t recent(Instant now) {
    roll(now);
    return std::max(previous_, current_);
  }

 private:
  void roll(Instant now) {
    const Duration age = now - start_;
    if (age < kWindow) return;
    previous_ = age < kWindow * 2 ? current_ : 0;
    current_ = 0;
    start_ = now;
  }
  Instant start_;
  uint32_t previous_ = 0;  // in the window before the current one
  uint32_t current_ = 0;   // since start_
};

}  // namespace ws::tcp
