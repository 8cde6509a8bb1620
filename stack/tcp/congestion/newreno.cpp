#include "stack/tcp/congestion/newreno.hpp"

#include <algorithm>

#include "stack/tcp/congestion/cubic.hpp"

namespace ws::tcp {

void NewReno::on_ack(uint32_t acked, uint32_t, Instant, Duration) {
  if (cwnd_ < ssthresh_) {
    // RFC 3465: grow by the bytes acked, at most 2*SMSS per ACK.
    cwnd_ += std::min(acked, 2 * mss_);
    return;
  }
  // RFC 5681 (3): about one SMSS per RTT.
  ca_acc_ += acked;
  if (ca_acc_ >= cwnd_) {
    ca_acc_ -= cwnd_;
    cwnd_ += mss_;
  }
}

void NewReno::on_loss(uint32_t in_flight, Instant) {
  // RFC 5681 (4): ssthresh = max(FlightSize / 2, 2*SMSS).
  ssthresh_ = std::max(in_flight / 2, 2 * mss_);
  cwnd_ = ssthresh_;
  ca_acc_ = 0;
}

std::unique_ptr<CongestionControl> make_congestion(CongestionAlgo algo) {
  if (algo == CongestionAlgo::kNewReno) return std::make_unique<NewReno>();
  return std::make_unique<Cubic>();
}

}  // namespace ws::tcp
