#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "stack/core/drops.hpp"

namespace ws {
namespace {

bool is_snake_case(std::string_view s) {
  if (s.empty() || !(s.front() >= 'a' && s.front() <= 'z') || s.back() == '_') return false;
  char prev = 0;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok || (c == '_' && prev == '_')) return false;
    prev = c;
  }
  return true;
}

TEST(DropReason, NamesAreUniqueSnakeCaseAndKnown) {
  std::set<std::string_view> seen;
  for (size_t i = 0; i < kDropReasonCount; ++i) {
    std::string_view n = drop_reason_name(static_cast<DropReason>(i));
    EXPECT_FALSE(n.empty()) << i;
    EXPECT_NE(n, "unknown") << i;
    EXPECT_TRUE(is_snake_case(n)) << i << ": " << n;
    EXPECT_TRUE(seen.insert(n).second) << "duplicate name " << n;
  }
  EXPECT_EQ(seen.size(), kDropReasonCount);
}

TEST(DropReason, OutOfRangeIsUnknown) {
  EXPECT_EQ(drop_reason_name(DropReason::kCount), "unknown");
  EXPECT_EQ(drop_reason_name(static_cast<DropReason>(0xffff)), "unknown");
}

// The names are a metrics contract: pin them to their enumerators so that a reordered
// enum or name table is caught (adding reasons at the end needs a line here).
TEST(DropReason, NamesMatchEnumerators) {
  const std::pair<DropReason, std::string_view> expected[] = {
      {DropReason::kEthTruncated, "eth_truncated"},
      {DropReason::kEthNotForUs, "eth_not_for_us"},
      {DropReason::kEthUnknownType, "eth_unknown_type"},
      {DropReason::kVlanUnsupported, "vlan_unsupported"},
      {DropReason::kArpTruncated, "arp_truncated"},
      {DropReason::kArpBadFormat, "arp_bad_format"},
      {DropReason::kArpNotForUs, "arp_not_for_us"},
      {DropReason::kArpQueueFull, "arp_queue_full"},
      {DropReason::kArpResolveFailed, "arp_resolve_failed"},
      {DropReason::kIpv4Truncated, "ipv4_truncated"},
      {DropReason::kIpv4BadVersion, "ipv4_bad_version"},
      {DropReason::kIpv4BadIhl, "ipv4_bad_ihl"},
      {DropReason::kIpv4BadTotalLength, "ipv4_bad_total_length"},
      {DropReason::kIpv4BadChecksum, "ipv4_bad_checksum"},
      {DropReason::kIpv4BadSource, "ipv4_bad_source"},
      {DropReason::kIpv4NotForUs, "ipv4_not_for_us"},
      {DropReason::kIpv4TtlExpired, "ipv4_ttl_expired"},
      {DropReason::kIpv4Fragment, "ipv4_fragment"},
      {DropReason::kIpv4UnknownProtocol, "ipv4_unknown_protocol"},
      {DropReason::kIpv4NoRoute, "ipv4_no_route"},
      {DropReason::kIpv4Options, "ipv4_options"},
      {DropReason::kIcmpTruncated, "icmp_truncated"},
      {DropReason::kIcmpBadChecksum, "icmp_bad_checksum"},
      {DropReason::kIcmpUnsupportedType, "icmp_unsupported_type"},
      {DropReason::kIcmpRateLimited, "icmp_rate_limited"},
      {DropReason::kUdpTruncated, "udp_truncated"},
      {DropReason::kUdpBadLength, "udp_bad_length"},
      {DropReason::kUdpBadChecksum, "udp_bad_checksum"},
      {DropReason::kUdpPortUnreachable, "udp_port_unreachable"},
      {DropReason::kUdpSocketFull, "udp_socket_full"},
      {DropReason::kTcpTruncated, "tcp_truncated"},
      {DropReason::kTcpBadDataOffset, "tcp_bad_data_offset"},
      {DropReason::kTcpBadChecksum, "tcp_bad_checksum"},
      {DropReason::kTcpBadOptions, "tcp_bad_options"},
      {DropReason::kTcpNoListener, "tcp_no_listener"},
      {DropReason::kTcpSynQueueFull, "tcp_syn_queue_full"},
      {DropReason::kTcpAcceptQueueFull, "tcp_accept_queue_full"},
      {DropReason::kTcpOutOfWindow, "tcp_out_of_window"},
      {DropReason::kTcpBadAck, "tcp_bad_ack"},
      {DropReason::kTcpPawsRejected, "tcp_paws_rejected"},
      {DropReason::kTcpRstInvalid, "tcp_rst_invalid"},
      {DropReason::kTcpNoConnection, "tcp_no_connection"},
      {DropReason::kTcpReceiveBufferFull, "tcp_receive_buffer_full"},
      {DropReason::kTcpNoMemory, "tcp_no_memory"},
      {DropReason::kTcpBadFlags, "tcp_bad_flags"},
      {DropReason::kNoMbuf, "no_mbuf"},
      {DropReason::kTxQueueFull, "tx_queue_full"},
      {DropReason::kFrameTooLong, "frame_too_long"},
      {DropReason::kTcpSynCookieInvalid, "tcp_syncookie_invalid"},
      {DropReason::kTcpRstRateLimited, "tcp_rst_rate_limited"},
      {DropReason::kTcpTimeWaitRst, "tcp_time_wait_rst"},
      {DropReason::kTcpMaxConnections, "tcp_max_connections"},
      {DropReason::kIpv4ReassemblyEvicted, "ipv4_reassembly_evicted"},
      {DropReason::kRxTruncated, "rx_truncated"},
      {DropReason::kUdp6ZeroChecksum, "udp6_zero_checksum"},
  };
  for (const auto& [r, name] : expected) {
    EXPECT_EQ(drop_reason_name(r), name) << static_cast<int>(r);
  }
  // Reasons added later must still satisfy NamesAreUniqueSnakeCaseAndKnown; they only
  // need a line above to be pinned too.
  EXPECT_GE(kDropReasonCount, std::size(expected));
}

TEST(DropCounters, AddGetTotal) {
  DropCounters c;
  EXPECT_EQ(c.total(), 0u);
  c.add(DropReason::kTcpBadChecksum);
  c.add(DropReason::kTcpBadChecksum, 4);
  c.add(DropReason::kFrameTooLong, 10);
  EXPECT_EQ(c.get(DropReason::kTcpBadChecksum), 5u);
  EXPECT_EQ(c.get(DropReason::kFrameTooLong), 10u);
  EXPECT_EQ(c.get(DropReason::kEthTruncated), 0u);
  EXPECT_EQ(c.total(), 15u);
  EXPECT_EQ(alignof(DropCounters), 64u);  // one core's counters never share a cache line
}

}  // namespace
}  // namespace ws
