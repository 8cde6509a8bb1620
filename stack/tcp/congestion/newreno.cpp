#include "stack/tcp/congestion/newreno.hpp"

#include <algorithm>
#include <new>

#include "stack/tcp/congestion/cubic.hpp"

namespace ws::tcp {

void NewReno::on_ack_avoidance(uint32_t acked, uint32_t, Instant, Duration) {
  // RFC 5681 (3): about one SMSS per RTT.
  ca_acc_ += acked;
  if (ca_acc_ >= cwnd_) {
    ca_acc_ -= cwnd_;
    cwnd_ += mss_;
  }
}

void NewReno::on_loss(uint32_t in_flight, Instant) {
  // RFC 5681 (4): ssthresh = max(FlightSize / 2, 2*SMSS), FlightSize at most cwnd.
  ssthresh_ = std::max(reduced_base(in_flight) / 2, 2 * mss_);
  cwnd_ = ssthresh_;
  ca_acc_ = 0;
}

std::unique_ptr<CongestionControl> make_congestion(CongestionAlgo algo) {
  if (algo == CongestionAlgo::kNewReno) return std::make_unique<NewReno>();
  return std::make_unique<Cubic>();
}

CongestionControl& CongestionSlot::emplace(CongestionAlgo algo) {
  static_assert(sizeof(NewReno) <= kStorageBytes && alignof(NewReno) <= alignof(std::max_align_t));
  static_assert(sizeof(Cubic) <= kStorageBytes && alignof(Cubic) <= alignof(std::max_align_t));
  clear();
  if (algo == CongestionAlgo::kNewReno)
    cc_ = new (buf_) NewReno();
  else
    cc_ = new (buf_) Cubic();
  return *cc_;
}

}  // namespace ws::tcp
