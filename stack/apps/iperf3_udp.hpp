// iperf3's UDP data plane: the header every datagram starts with, the receiver's
// loss / out-of-order / jitter accounting, and the rate pacing a sender uses.
//
// Header (iperf_udp.c): u32be seconds, u32be microseconds of the sender's clock when
// it sent the datagram, then the sequence number (u32be, or u64be when the client
// asked for --udp-counters-64bit). Sequence numbers start at 1.
#pragma once

#include <cstdint>
#include <span>

#include "stack/core/time.hpp"

namespace ws::iperf3 {

struct UdpHeader {
  uint32_t sec = 0;
  uint32_t usec = 0;
  uint64_t seq = 0;
};

constexpr size_t udp_header_size(bool counters64) { return counters64 ? 16 : 12; }

// False when the datagram is shorter than the header.
bool parse_udp_header(std::span<const uint8_t> d, bool counters64, UdpHeader& out);
// Writes the header for datagram `seq` sent at `now` into the front of `d`.
void write_udp_header(std::span<uint8_t> d, bool counters64, Instant now, uint64_t seq);

// What the receiving side of one UDP stream counts, as iperf3 does:
// - `highest` is the largest sequence number seen; a jump forward counts the gap as
//   lost; a number at or below it is out of order and takes one back off the losses.
// - jitter is RFC 3550 section 6.4.1 / A.8 (RFC 1889's estimator iperf3 cites): the
//   mean deviation of the difference in transit time of consecutive datagrams, in
//   seconds, smoothed by 1/16. Only differences matter, so the two clocks need not
//   agree; the first datagram only sets the reference.
class UdpReceiveStats {
 public:
  void on_datagram(const UdpHeader& h, size_t bytes, Instant arrival);

  uint64_t bytes = 0;
  uint64_t datagrams = 0;
  uint64_t highest = 0;
  uint64_t lost = 0;
  uint64_t out_of_order = 0;
  double jitter_s = 0;

 private:
  double prev_transit_ = 0;
};

// Rate limiting for a sender, as iperf3's throttle: the sender may go on while what it
// has sent stays under rate x elapsed time.
class Pacer {
 public:
  void start(Instant now, uint64_t rate_bps) {
    start_ = now;
    rate_bps_ = rate_bps;
  }
  bool unlimited() const { return rate_bps_ == 0; }
  // Bytes that may still go out at `now` after `sent` so far.
  uint64_t allowance(Instant now, uint64_t sent) const;

 private:
  Instant start_;
  uint64_t rate_bps_ = 0;
};

}  // namespace ws::iperf3
