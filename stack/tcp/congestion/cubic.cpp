#include "stack/tcp/congestion/cubic.hpp"

#include <algorithm>
#include <cmath>

namespace ws::tcp {

double Cubic::w_cubic(double t) const {
  double d = t - k_;
  return kC * d * d * d + w_max_;
}

// RFC 9438 section 4.10: slow start below ssthresh (CongestionControl::on_ack); what lies
// beyond it counts here.
void Cubic::on_ack_avoidance(uint32_t acked, uint32_t, Instant now, Duration srtt) {
  double mss = static_cast<double>(mss_);
  if (!epoch_valid_) {
    epoch_ = now;
    epoch_valid_ = true;
    cwnd_seg_ = cwnd_ / mss;
    if (w_max_ < cwnd_seg_) {
      // No reduction yet (left slow start by ssthresh): start at the plateau.
      w_max_ = cwnd_seg_;
      k_ = 0;
    } else {
      k_ = std::cbrt((w_max_ - cwnd_seg_) / kC);  // RFC 9438 eq. 2
    }
    w_est_ = cwnd_seg_;
  }
  double t = (now - epoch_).secs();
  double rtt = std::max(srtt.secs(), 0.001);
  // Target one RTT ahead (section 4.2), bounded to 1.5x cwnd.
  double target = std::clamp(w_cubic(t + rtt), cwnd_seg_, 1.5 * cwnd_seg_);
  double seg_acked = acked / mss;
  // Reno-friendly estimate (section 4.3, eq. 4): alpha = 3(1-beta)/(1+beta).
  double alpha = w_est_ >= w_max_ ? 1.0 : 3.0 * (1.0 - kBeta) / (1.0 + kBeta);
  w_est_ += alpha * seg_acked / cwnd_seg_;
  if (w_est_ > target) {
    target = w_est_;
    cwnd_seg_ = std::max(cwnd_seg_, w_est_);
  } else {
    // Section 4.4/4.5: grow by (target - cwnd)/cwnd per segment acked.
    cwnd_seg_ += (target - cwnd_seg_) / cwnd_seg_ * seg_acked;
  }
  cwnd_ = static_cast<uint32_t>(std::min(cwnd_seg_ * mss, 4.0e9));
}

// RFC 9438 section 4.6: from cwnd, not from FlightSize (RFC 5681 eq. 4), as Linux does: an
// application or the peer's window keeping the flight below cwnd then costs no more than
// the one reduction. The section asks for cwnd not to grow while the flight stays below
// it, which the connection ensures (Tcb::cwnd_in_use, RFC 9438 section 5.8).
void Cubic::on_loss(uint32_t, Instant) {
  double mss = static_cast<double>(mss_);
  double cur = static_cast<double>(cwnd_) / mss;
  prev_w_max_ = w_max_;
  // Fast convergence (section 4.7): release bandwidth to newer flows.
  if (cur < w_max_)
    w_max_ = cur * (1.0 + kBeta) / 2.0;
  else
    w_max_ = cur;
  double ns = std::max(cur * kBeta, 2.0);  // section 4.6
  ssthresh_ = static_cast<uint32_t>(ns * mss);
  cwnd_ = ssthresh_;
  cwnd_seg_ = ns;
  epoch_valid_ = false;
}

void Cubic::on_rto(uint32_t in_flight, Instant now) {
  on_loss(in_flight, now);
  cwnd_ = mss_;  // section 4.8: restart from one segment, slow start to ssthresh
  cwnd_seg_ = 1;
}

}  // namespace ws::tcp

namespace ws::tcp {

void Cubic::restore(uint32_t cwnd, uint32_t ssthresh) {
  CongestionControl::restore(cwnd, ssthresh);
  w_max_ = prev_w_max_;
  cwnd_seg_ = static_cast<double>(cwnd_) / mss_;
  epoch_valid_ = false;
}

}  // namespace ws::tcp
