// Segment sizes derived from the link MTU (RFC 9293 section 3.7.1, RFC 879).
#pragma once

#include <algorithm>
#include <cstdint>

namespace ws::tcp {

inline constexpr uint32_t kIpv4HeaderLen = 20;
inline constexpr uint32_t kTcpHeaderLen = 20;
inline constexpr uint32_t kTimestampOptionLen = 12;  // NOP NOP TS(10), RFC 7323 appendix A
// RFC 9293 section 3.7.1: without an MSS option the peer takes 536.
inline constexpr uint32_t kDefaultPeerMss = 536;

// The MSS we advertise: the MTU less the fixed IPv4 and TCP headers.
constexpr uint32_t advertised_mss(uint32_t mtu) {
  return mtu > kIpv4HeaderLen + kTcpHeaderLen ? mtu - kIpv4HeaderLen - kTcpHeaderLen : 0;
}

// The most payload we put in one segment: the smaller of both MSS values, less the
// options every segment carries (RFC 9293 3.7.1: "options actually carried").
constexpr uint32_t effective_send_mss(uint32_t ours, uint32_t peer, bool timestamps) {
  uint32_t m = std::min(ours, peer);
  uint32_t opt = timestamps ? kTimestampOptionLen : 0;
  return m > opt ? m - opt : 1;
}

}  // namespace ws::tcp
