// Per-core stack counters: plain integers, written only by the owning core and
// copied out to the stats segment by that same core (no atomics on the fast path).
#pragma once

#include <cstdint>

#include "stack/core/addr.hpp"

namespace ws {

struct alignas(64) StackCounters {
  uint64_t rx_frames = 0;
  uint64_t rx_bytes = 0;
  uint64_t tx_frames = 0;
  uint64_t tx_bytes = 0;
  uint64_t arp_requests_in = 0;
  uint64_t arp_replies_in = 0;
  uint64_t arp_requests_out = 0;
  uint64_t arp_replies_out = 0;
  uint64_t arp_gratuitous_out = 0;
  uint64_t arp_entries = 0;  // gauge
  uint64_t ipv4_in = 0;
  uint64_t ipv4_out = 0;
  uint64_t icmp_in = 0;
  uint64_t icmp_echo_replies_out = 0;
  uint64_t icmp_errors_out = 0;
  uint64_t icmp_unreachable_in = 0;
  // By address family (family_index); the metrics export their sums as the totals.
  FamilyCount udp_in{};
  FamilyCount udp_out{};
  uint64_t tcp_in = 0;
  // IPv6, ICMPv6 and neighbour discovery.
  uint64_t ipv6_in = 0;
  uint64_t ipv6_out = 0;
  uint64_t icmpv6_in = 0;
  uint64_t icmpv6_echo_replies_out = 0;
  uint64_t icmpv6_errors_out = 0;
  uint64_t icmpv6_errors_in = 0;
  uint64_t ndp_solicits_in = 0;
  uint64_t ndp_adverts_in = 0;
  uint64_t ndp_solicits_out = 0;
  uint64_t ndp_adverts_out = 0;
  uint64_t ndp_dad_duplicates = 0;
  uint64_t ndp_entries = 0;  // gauge
  // Router discovery (RFC 4861 6.3): advertisements taken in, solicitations sent, and the
  // default routers known now (summed over interfaces).
  uint64_t ndp_ra_in = 0;
  uint64_t ndp_rs_out = 0;
  uint64_t ndp_default_routers = 0;  // gauge
  // ICMPv6 errors sent, by type (their sum is icmpv6_errors_out), and packets given up after
  // neighbour resolution failed, reported to the upper layer as address unreachable.
  uint64_t icmpv6_unreachable_out = 0;
  uint64_t icmpv6_time_exceeded_out = 0;
  uint64_t icmpv6_param_problem_out = 0;
  uint64_t icmpv6_address_unreachable = 0;
  // MLDv2 (RFC 3810): reports sent, queries answered.
  uint64_t mld_reports_out = 0;
  uint64_t mld_queries_in = 0;
  // Buffer paths, counted by the data plane: frames that arrived in more than one
  // mbuf (parsed in place as a chain), frames sent as mbuf chains, of those the
  // ones built contiguously in the staging area and copied into the chain (the
  // others were gathered: written into the chain directly), and TCP
  // super-segments the port cut (TSO).
  uint64_t rx_chained_frames = 0;
  // Counted by the stack: headers that straddled a segment boundary and were
  // copied into a header-sized buffer, and chained datagrams copied whole for a
  // consumer that reads one span (reassembly, UDP sockets, ICMP).
  uint64_t rx_header_pullups = 0;
  uint64_t rx_linearized = 0;
  uint64_t tx_chained_frames = 0;
  uint64_t tx_staged_frames = 0;
  uint64_t tx_tso_frames = 0;
  // Packet capture, counted by the data plane: frames copied into the core's capture ring,
  // and copies dropped because the ring was full (the capture reader fell behind).
  uint64_t capture_copied = 0;
  uint64_t capture_dropped = 0;
};

}  // namespace ws
