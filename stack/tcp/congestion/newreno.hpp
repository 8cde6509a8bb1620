// NewReno window growth: slow start and congestion avoidance (RFC 5681 section 3.1)
// with appropriate byte counting (RFC 3465, L = 2*SMSS).
#pragma once

#include "stack/tcp/congestion/congestion.hpp"

namespace ws::tcp {

class NewReno final : public CongestionControl {
 public:
  void on_loss(uint32_t in_flight, Instant now) override;

 private:
  void on_ack_avoidance(uint32_t acked, uint32_t in_flight, Instant now, Duration srtt) override;

  uint32_t ca_acc_ = 0;  // bytes acked since cwnd last grew in congestion avoidance
};

}  // namespace ws::tcp
