#include "stack/core/drops.hpp"

#include <iterator>

namespace ws {

namespace {
constexpr std::string_view kDropReasonNames[] = {
    "eth_truncated",
    "eth_not_for_us",
    "eth_unknown_type",
    "vlan_unsupported",
    "arp_truncated",
    "arp_bad_format",
    "arp_not_for_us",
    "arp_queue_full",
    "arp_resolve_failed",
    "ipv4_truncated",
    "ipv4_bad_version",
    "ipv4_bad_ihl",
    "ipv4_bad_total_length",
    "ipv4_bad_checksum",
    "ipv4_bad_source",
    "ipv4_not_for_us",
    "ipv4_ttl_expired",
    "ipv4_fragment",
    "ipv4_unknown_protocol",
    "ipv4_no_route",
    "ipv4_options",
    "icmp_truncated",
    "icmp_bad_checksum",
    "icmp_unsupported_type",
    "icmp_rate_limited",
    "udp_truncated",
    "udp_bad_length",
    "udp_bad_checksum",
    "udp_port_unreachable",
    "udp_socket_full",
    "tcp_truncated",
    "tcp_bad_data_offset",
    "tcp_bad_checksum",
    "tcp_bad_options",
    "tcp_no_listener",
    "tcp_syn_queue_full",
    "tcp_accept_queue_full",
    "tcp_out_of_window",
    "tcp_bad_ack",
    "tcp_paws_rejected",
    "tcp_rst_invalid",
    "tcp_no_connection",
    "tcp_receive_buffer_full",
    "tcp_no_memory",
    "tcp_bad_flags",
    "no_mbuf",
    "tx_queue_full",
    "frame_too_long",
    "ipv4_reassembly_timeout",
    "ipv4_reassembly_overlap",
    "ipv4_reassembly_table_full",
    "ipv4_reassembly_too_many_fragments",
    "ipv4_reassembly_too_large",
    "rx_too_many_segments",
    "steer_ring_full",
    "tcp_syncookie_invalid",
    "tcp_rst_rate_limited",
    "tcp_time_wait_rst",
    "tcp_max_connections",
    "ipsec_no_sa",
    "ipsec_policy",
    "ipsec_malformed",
    "ipsec_sa_error",
    "ipsec_seq_unreserved",
    "tcp_syn_shed",
    "ipv6_truncated",
    "ipv6_bad_version",
    "ipv6_bad_payload_length",
    "ipv6_bad_source",
    "ipv6_not_for_us",
    "ipv6_ext_truncated",
    "ipv6_ext_chain_too_long",
    "ipv6_ext_bad_order",
    "ipv6_unknown_option",
    "ipv6_routing_type0",
    "ipv6_routing_header",
    "ipv6_unknown_next_header",
    "ipv6_fragment_bad_length",
    "ipv6_fragment_incomplete_chain",
    "ipv6_fragment",
    "icmpv6_truncated",
    "icmpv6_bad_checksum",
    "icmpv6_unsupported_type",
    "icmpv6_rate_limited",
    "ndp_bad_hop_limit",
    "ndp_malformed",
    "ndp_bad_options",
    "ndp_not_for_us",
    "ndp_queue_full",
    "ndp_resolve_failed",
    "ipv6_no_route",
    "ipv6_reassembly_timeout",
    "ipv6_reassembly_overlap",
    "ipv6_reassembly_table_full",
    "ipv6_reassembly_too_many_fragments",
    "ipv6_reassembly_too_large",
    "ipv4_reassembly_evicted",
    "rx_truncated",
    "ndp_ra_not_accepted",
    "ndp_ra_bad_source",
    "icmpv6_error_unmatched",
    "mld_bad_query",
    "udp6_zero_checksum",
};
static_assert(std::size(kDropReasonNames) == kDropReasonCount, "every DropReason needs a name");
}  // namespace

std::string_view drop_reason_name(DropReason r) {
  auto i = static_cast<size_t>(r);
  return i < kDropReasonCount ? kDropReasonNames[i] : "unknown";
}

bool is_receive_drop(DropReason r) {
  switch (r) {
    case DropReason::kArpQueueFull:
    case DropReason::kArpResolveFailed:
    case DropReason::kNoMbuf:
    case DropReason::kTxQueueFull:
    case DropReason::kFrameTooLong:
    case DropReason::kIpv4ReassemblyTimeout:
    case DropReason::kIpv4ReassemblyEvicted:  // counted while another fragment is taken in
    case DropReason::kIpv4NoRoute:
    case DropReason::kIpv6NoRoute:
    case DropReason::kIpv6ReassemblyTimeout:
    case DropReason::kNdpQueueFull:
    case DropReason::kNdpResolveFailed:
    case DropReason::kCount:
      return false;
    default:
      return true;
  }
}

}  // namespace ws
