// Segment sizes derived from the link MTU (RFC 9293 section 3.7.1, RFC 879).
#pragma once

#include <algorithm>
#include <cstdint>

namespace ws::tcp {

inline constexpr uint32_t kIpv4HeaderLen = 20;
inline constexpr uint32_t kTcpHeaderLen = 20;
inline constexpr uint32_t kTimestampOptionLen = 12;  // NOP NOP TS(10), RFC 7323 appendix A
// MSS(4), SACK-permitted(2) TS(10), NOP WS(3): a SYN with every option (wire::emit_tcp_syn).
inline constexpr uint32_t kSynAllOptionsLen = 20;
// RFC 9293 section 3.7.1: without an MSS option the peer takes 536.
inline constexpr uint32_t kDefaultPeerMss = 536;

inline constexpr uint32_t kIpv6HeaderLen = 40;
// The smallest MTU a path may have: 576 for IPv4 (RFC 791), 1280 for IPv6 (RFC 8200 5).
inline constexpr uint32_t kIpv4MinMtu = 576;
inline constexpr uint32_t kIpv6MinMtu = 1280;

// The MSS we advertise: the MTU less the fixed IP and TCP headers (RFC 9293 3.7.1; 60
// bytes over IPv6, RFC 8200 8.3).
constexpr uint32_t advertised_mss(uint32_t mtu, uint32_t ip_header_len = kIpv4HeaderLen) {
  return mtu > ip_header_len + kTcpHeaderLen ? mtu - ip_header_len - kTcpHeaderLen : 0;
}

// The most payload we put in one segment: the smaller of both MSS values, less the
// options every segment carries (RFC 9293 3.7.1: "options actually carried").
constexpr uint32_t effective_send_mss(uint32_t ours, uint32_t peer, bool timestamps) {
  uint32_t m = std::min(ours, peer);
  uint32_t opt = timestamps ? kTimestampOptionLen : 0;
  return m > opt ? m - opt : 1;
}

}  // namespace ws::tcp
