// CUBIC (RFC 9438): window growth as a cubic function of the time since the last
// congestion event, with a Reno-friendly region (section 4.3) and fast convergence
// (section 4.7).
#pragma once

#include "stack/tcp/congestion/congestion.hpp"

namespace ws::tcp {

class Cubic final : public CongestionControl {
 public:
  static constexpr double kC = 0.4;     // RFC 9438 section 5
  static constexpr double kBeta = 0.7;  // multiplicative decrease factor

  void on_loss(uint32_t in_flight, Instant now) override;
  void on_rto(uint32_t in_flight, Instant now) override;
  void restore(uint32_t cwnd, uint32_t ssthresh) override;

  // Exposed for tests: W_cubic(t) in segments (RFC 9438 eq. 1).
  double w_cubic(double t_secs) const;
  double k() const { return k_; }
  double w_max() const { return w_max_; }

 private:
  void on_ack_avoidance(uint32_t acked, uint32_t in_flight, Instant now, Duration srtt) override;

  double w_max_ = 0;       // segments, before the last reduction
  double prev_w_max_ = 0;  // before the last reduction's update (for undo)
  double k_ = 0;           // seconds
  double w_est_ = 0;       // Reno-friendly estimate, segments (eq. 4)
  double cwnd_seg_ = 0;    // cwnd in segments, fractional
  Instant epoch_;          // start of the current congestion avoidance epoch
  bool epoch_valid_ = false;
};

}  // namespace ws::tcp
