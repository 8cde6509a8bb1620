// Congestion control behind one interface (cf. Linux tcp_cong.c). Windows are in
// bytes; the connection calls these hooks and reads cwnd()/ssthresh().
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "stack/core/time.hpp"
#include "stack/tcp/api.hpp"

namespace ws::tcp {

class CongestionControl {
 public:
  virtual ~CongestionControl() = default;
  // Initial window, RFC 6928: min(10*MSS, max(2*MSS, 14600)).
  virtual void init(uint32_t mss) {
    mss_ = mss;
    cwnd_ = std::min(10 * mss, std::max(2 * mss, 14600u));
    ssthresh_ = UINT32_MAX;
  }
  void set_mss(uint32_t mss) { mss_ = mss; }
  // New data acknowledged outside loss recovery: slow start below ssthresh (every
  // algorithm's, inline: most ACKs of short connections end there), then what lies beyond
  // it goes to the algorithm's congestion avoidance.
  void on_ack(uint32_t acked, uint32_t in_flight, Instant now, Duration srtt) {
    if (cwnd_ < ssthresh_ && (acked = slow_start(acked)) == 0) return;
    on_ack_avoidance(acked, in_flight, now, srtt);
  }
  // Loss detected by duplicate ACKs or SACK (entering fast recovery): sets ssthresh
  // and cwnd. `in_flight` is SND.MAX - SND.UNA (RFC 5681 FlightSize). With SACK it also
  // counts data delivered beyond the holes, which under heavy loss far exceeds what the
  // window let into the network; NewReno reduces from the smaller of it and cwnd
  // (reduced_base), or a "reduction" could raise the window. CUBIC reduces from cwnd
  // (RFC 9438 section 4.6), which the connection keeps from growing beyond what the sender
  // uses (Tcb::cwnd_in_use).
  virtual void on_loss(uint32_t in_flight, Instant now) = 0;
  // Retransmission timeout (RFC 5681 (4)): ssthresh from flight size, cwnd = 1 MSS.
  virtual void on_rto(uint32_t in_flight, Instant now) {
    on_loss(in_flight, now);
    cwnd_ = mss_;
  }
  // What a loss reduces from: FlightSize, at most cwnd (on_loss).
  uint32_t reduced_base(uint32_t in_flight) const { return std::min(in_flight, cwnd_); }
  // Fast recovery finished (RFC 6582 step 3 / RFC 6675 section 5).
  virtual void on_recovery_exit(uint32_t in_flight) {
    cwnd_ = std::max(std::min(ssthresh_, in_flight + mss_), 2 * mss_);
  }
  // Undo a reduction found to be spurious (RFC 4015).
  virtual void restore(uint32_t cwnd, uint32_t ssthresh) {
    cwnd_ = std::max(cwnd_, cwnd);
    ssthresh_ = std::max(ssthresh_ == UINT32_MAX ? 0 : ssthresh_, ssthresh);
  }
  uint32_t cwnd() const { return cwnd_; }
  uint32_t ssthresh() const { return ssthresh_; }
  void set_cwnd(uint32_t c) { cwnd_ = c; }

 protected:
  // Slow start (RFC 5681 3.1) counting every byte an ACK covers, up to ssthresh; returns
  // the bytes left over for congestion avoidance. Unlike RFC 3465's limit of 2*SMSS per
  // ACK (as Linux, tcp_slow_start): a receiver that ACKs a whole flight at once (GRO,
  // or a delayed ACK while its application reads slowly) would otherwise turn the
  // doubling per round trip into two segments per round trip.
  uint32_t slow_start(uint32_t acked) {
    const uint32_t grow = std::min(acked, ssthresh_ - cwnd_);
    cwnd_ += grow;
    return acked - grow;
  }

  // Congestion avoidance for `acked` bytes (at or above ssthresh).
  virtual void on_ack_avoidance(uint32_t acked, uint32_t in_flight, Instant now, Duration srtt) = 0;

  uint32_t mss_ = 536;
  uint32_t cwnd_ = 0;
  uint32_t ssthresh_ = UINT32_MAX;
};

std::unique_ptr<CongestionControl> make_congestion(CongestionAlgo algo);

// The connection's congestion control, stored inside the Tcb instead of on the heap: one
// malloc/free pair less per connection (docs/tcp.md, "Memory under connection churn").
// Holds whichever algorithm emplace() built; pinned (never copied or moved), since the
// algorithm lives in its own buffer. The size bound is checked where the algorithms are
// known (newreno.cpp).
// NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init): buf_ is storage emplace() fills
class CongestionSlot {
 public:
  static constexpr size_t kStorageBytes = 96;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init): buf_, as above
  CongestionSlot() = default;
  ~CongestionSlot() { clear(); }
  CongestionSlot(const CongestionSlot&) = delete;
  CongestionSlot& operator=(const CongestionSlot&) = delete;

  // Replaces the algorithm held with a fresh instance of `algo`.
  CongestionControl& emplace(CongestionAlgo algo);
  void clear() {
    if (cc_ != nullptr) cc_->~CongestionControl();
    cc_ = nullptr;
  }
  explicit operator bool() const { return cc_ != nullptr; }
  CongestionControl* operator->() const { return cc_; }
  CongestionControl& operator*() const { return *cc_; }

 private:
  alignas(std::max_align_t) std::byte buf_[kStorageBytes];  // emplace() constructs in it
  CongestionControl* cc_ = nullptr;
};

}  // namespace ws::tcp
