#include "dataplane/metrics.hpp"

#include <rte_ethdev.h>
#include <rte_mempool.h>

#include <cstddef>
#include <cstdio>
#include <iterator>
#include <string_view>

#include "dataplane/checksum_hint.hpp"
#include "dataplane/ipv6_port.hpp"
#include "dataplane/unmap_guard.hpp"
#include "ws_version.h"

namespace ws::dp {

namespace {

using stats::LabelPair;
using stats::MetricType;
using stats::Scope;

// One series that copies a uint64_t field of `Source`: its name, help and type, the scale
// the reader applies (1e-9 turns nanoseconds into seconds), and the label, if any, that
// tells it from the other series of its family. Every table below is walked by
// Metrics::Registrar::fields at start and by copy_fields on each update.
template <class Source>
struct FieldSeries {
  constexpr FieldSeries(uint64_t Source::*f, const char* n, const char* h,
                        MetricType t = MetricType::kCounter, double s = 1.0, LabelPair l = {})
      : field(f), name(n), help(h), type(t), scale(s), label(l) {}
  uint64_t Source::*field;
  const char* name;
  const char* help;
  MetricType type;
  double scale;
  LabelPair label;
};

template <class Source>
void copy_fields(uint64_t* values, const Source& src,
                 const std::vector<std::pair<uint64_t Source::*, stats::Slot>>& slots) {
  for (const auto& [field, slot] : slots) values[slot.offset] = src.*field;
}

template <class Source>
void copy_families(uint64_t* values, const Source& src, const FamilySlots<Source>& slots) {
  for (const FamilySlot<Source>& s : slots) {
    const FamilyCount& c = src.*(s.field);
    if (s.total) values[s.total->offset] = family_total(c);
    for (size_t f = 0; f < kFamilies; ++f) values[s.by[f].offset] = c[f];
  }
}

// Per port, labelled port (rte_eth_stats_get).
constexpr FieldSeries<rte_eth_stats> kPortCounters[] = {
    {&rte_eth_stats::ipackets, "wirespeed_port_receive_packets_total",
     "Packets received by the port."},
    {&rte_eth_stats::ibytes, "wirespeed_port_receive_bytes_total", "Bytes received by the port."},
    {&rte_eth_stats::opackets, "wirespeed_port_transmit_packets_total",
     "Packets transmitted by the port."},
    {&rte_eth_stats::obytes, "wirespeed_port_transmit_bytes_total",
     "Bytes transmitted by the port."},
    {&rte_eth_stats::imissed, "wirespeed_port_receive_missed_packets_total",
     "Packets the port dropped because no RX descriptor was free "
     "(af_packet: frames the kernel dropped on a full socket ring)."},
    {&rte_eth_stats::ierrors, "wirespeed_port_receive_errors_total",
     "Erroneous packets received by the port."},
    {&rte_eth_stats::oerrors, "wirespeed_port_transmit_errors_total",
     "Packets the port failed to transmit."},
    {&rte_eth_stats::rx_nombuf, "wirespeed_port_receive_no_mbuf_total",
     "RX mbuf allocation failures."},
};

// The unmap guard (unmap_guard.hpp): process-wide, so global and unlabelled.
constexpr FieldSeries<unmap_guard::Stats> kUnmapMetrics[] = {
    {&unmap_guard::Stats::guarded, "wirespeed_unmap_guarded_total",
     "munmap calls from threads other than the pipeline cores while "
     "they ran (memif disconnects among them)."},
    {&unmap_guard::Stats::waits, "wirespeed_unmap_waits_total",
     "munmap calls that waited for a core to finish the loop iteration "
     "(and its bursts) it was in."},
    {&unmap_guard::Stats::timeouts, "wirespeed_unmap_wait_timeouts_total",
     "munmap waits that hit their bound and unmapped anyway."},
    {&unmap_guard::Stats::wait_ns, "wirespeed_unmap_wait_seconds_total",
     "Time munmap calls waited.", MetricType::kCounter, 1e-9},
    {&unmap_guard::Stats::max_wait_ns, "wirespeed_unmap_wait_max_seconds",
     "The longest single munmap wait so far (the bound is 0.25 s).", MetricType::kGauge, 1e-9},
};

#define WS_STACK_METRIC(field, name, help) \
  FieldSeries<StackCounters> { &StackCounters::field, name, help }

constexpr FieldSeries<StackCounters> kStackMetrics[] = {
    WS_STACK_METRIC(rx_frames, "wirespeed_stack_received_frames_total",
                    "Frames handed to the stack."),
    WS_STACK_METRIC(rx_bytes, "wirespeed_stack_received_bytes_total",
                    "Bytes of frames handed to the stack."),
    WS_STACK_METRIC(tx_frames, "wirespeed_stack_sent_frames_total",
                    "Frames the stack transmitted."),
    WS_STACK_METRIC(tx_bytes, "wirespeed_stack_sent_bytes_total",
                    "Bytes of frames the stack transmitted."),
    WS_STACK_METRIC(arp_requests_in, "wirespeed_arp_requests_received_total",
                    "ARP requests received."),
    WS_STACK_METRIC(arp_replies_in, "wirespeed_arp_replies_received_total",
                    "ARP replies received."),
    WS_STACK_METRIC(arp_requests_out, "wirespeed_arp_requests_sent_total",
                    "ARP requests sent to resolve next hops."),
    WS_STACK_METRIC(arp_replies_out, "wirespeed_arp_replies_sent_total", "ARP replies sent."),
    WS_STACK_METRIC(arp_gratuitous_out, "wirespeed_arp_gratuitous_sent_total",
                    "Gratuitous ARP announcements sent."),
    WS_STACK_METRIC(ipv4_in, "wirespeed_ipv4_received_packets_total",
                    "IPv4 packets accepted for local delivery."),
    WS_STACK_METRIC(ipv4_out, "wirespeed_ipv4_sent_packets_total", "IPv4 packets sent."),
    WS_STACK_METRIC(icmp_in, "wirespeed_icmp_received_messages_total", "ICMP messages received."),
    WS_STACK_METRIC(icmp_echo_replies_out, "wirespeed_icmp_echo_replies_sent_total",
                    "ICMP echo replies sent."),
    WS_STACK_METRIC(icmp_errors_out, "wirespeed_icmp_errors_sent_total",
                    "ICMP error messages sent."),
    WS_STACK_METRIC(icmp_unreachable_in, "wirespeed_icmp_errors_received_total",
                    "ICMP errors received."),
    WS_STACK_METRIC(ipv6_in, "wirespeed_ipv6_received_packets_total",
                    "IPv6 packets accepted for local delivery."),
    WS_STACK_METRIC(ipv6_out, "wirespeed_ipv6_sent_packets_total", "IPv6 packets sent."),
    WS_STACK_METRIC(icmpv6_in, "wirespeed_icmpv6_received_messages_total",
                    "ICMPv6 messages received (neighbour discovery included)."),
    WS_STACK_METRIC(icmpv6_echo_replies_out, "wirespeed_icmpv6_echo_replies_sent_total",
                    "ICMPv6 echo replies sent."),
    WS_STACK_METRIC(icmpv6_errors_out, "wirespeed_icmpv6_errors_sent_total",
                    "ICMPv6 error messages sent."),
    WS_STACK_METRIC(icmpv6_errors_in, "wirespeed_icmpv6_errors_received_total",
                    "ICMPv6 error messages received."),
    WS_STACK_METRIC(ndp_solicits_in, "wirespeed_ndp_solicitations_received_total",
                    "Neighbour solicitations received."),
    WS_STACK_METRIC(ndp_adverts_in, "wirespeed_ndp_advertisements_received_total",
                    "Neighbour advertisements received."),
    WS_STACK_METRIC(ndp_solicits_out, "wirespeed_ndp_solicitations_sent_total",
                    "Neighbour solicitations sent (resolution, probes, duplicate address "
                    "detection)."),
    WS_STACK_METRIC(ndp_adverts_out, "wirespeed_ndp_advertisements_sent_total",
                    "Neighbour advertisements sent."),
    WS_STACK_METRIC(ndp_dad_duplicates, "wirespeed_ndp_duplicate_addresses_total",
                    "Addresses duplicate address detection found in use by another node."),
    {&StackCounters::ndp_entries, "wirespeed_ndp_neighbors",
     "Entries in the IPv6 neighbour caches (every interface).", MetricType::kGauge},
    WS_STACK_METRIC(ndp_ra_in, "wirespeed_ndp_router_advertisements_received_total",
                    "Router advertisements received (valid or not; drops name the invalid)."),
    WS_STACK_METRIC(ndp_rs_out, "wirespeed_ndp_router_solicitations_sent_total",
                    "Router solicitations sent at start (ipv6.accept_ra)."),
    {&StackCounters::ndp_default_routers, "wirespeed_ndp_default_routers",
     "Default routers learned from router advertisements and not expired.", MetricType::kGauge},
    WS_STACK_METRIC(icmpv6_unreachable_out, "wirespeed_icmpv6_destination_unreachable_sent_total",
                    "ICMPv6 destination unreachable messages sent."),
    WS_STACK_METRIC(icmpv6_time_exceeded_out, "wirespeed_icmpv6_time_exceeded_sent_total",
                    "ICMPv6 time exceeded messages sent (fragment reassembly time exceeded)."),
    WS_STACK_METRIC(icmpv6_param_problem_out, "wirespeed_icmpv6_parameter_problems_sent_total",
                    "ICMPv6 parameter problem messages sent."),
    WS_STACK_METRIC(mld_reports_out, "wirespeed_mld_reports_sent_total",
                    "MLDv2 reports of the solicited-node groups sent (at start and to queries)."),
    WS_STACK_METRIC(mld_queries_in, "wirespeed_mld_queries_received_total",
                    "MLD queries received and answered with a report."),
    WS_STACK_METRIC(icmpv6_address_unreachable, "wirespeed_icmpv6_address_unreachable_total",
                    "Packets of ours given up after neighbour resolution failed, reported to "
                    "the upper layer as destination unreachable, address unreachable."),
    WS_STACK_METRIC(rx_chained_frames, "wirespeed_rx_chained_frames_total",
                    "Frames received in several mbufs (parsed in place as a chain)."),
    WS_STACK_METRIC(rx_header_pullups, "wirespeed_rx_header_pullups_total",
                    "Ethernet, ARP, IPv4, UDP and ICMP headers that straddled mbufs and were "
                    "copied into a header buffer."),
    WS_STACK_METRIC(rx_linearized, "wirespeed_rx_linearized_total",
                    "Chained datagrams copied into one buffer for a consumer that reads one span "
                    "(fragments, UDP sockets, ICMP)."),
    WS_STACK_METRIC(tx_chained_frames, "wirespeed_tx_chained_frames_total",
                    "Frames sent as mbuf chains (jumbo frames over small mbufs, TSO)."),
    WS_STACK_METRIC(tx_staged_frames, "wirespeed_tx_staged_frames_total",
                    "Chained frames built in the staging area and copied into their chain."),
    WS_STACK_METRIC(tx_tso_frames, "wirespeed_tx_tso_frames_total",
                    "TCP super-segments handed to the port to segment (TSO)."),
    WS_STACK_METRIC(capture_copied, "wirespeed_capture_copied_frames_total",
                    "Frames copied into the capture ring for a running packet capture."),
    WS_STACK_METRIC(capture_dropped, "wirespeed_capture_dropped_copies_total",
                    "Capture copies dropped because the capture ring was full (the reader "
                    "fell behind); the traffic itself is not affected."),
};
#undef WS_STACK_METRIC

// Counters kept per address family (FamilyCount, indexed by family_index): each is
// exported as one series per family, labelled family="ipv4"|"ipv6", under `name`, and,
// when `total` is set, as their sum under that (older, unlabelled) name. The breakdown
// has a name of its own so that sum() over a family's series never counts twice.
template <class Source>
struct FamilySeries {
  FamilyCount Source::*field;
  const char* total;  // nullptr: no unlabelled total
  const char* name;
  const char* help;
};

constexpr FamilySeries<StackCounters> kStackFamilyMetrics[] = {
    {&StackCounters::udp_in, "wirespeed_udp_received_datagrams_total",
     "wirespeed_udp_received_datagrams_by_family_total", "UDP datagrams received, by family."},
    {&StackCounters::udp_out, "wirespeed_udp_sent_datagrams_total",
     "wirespeed_udp_sent_datagrams_by_family_total", "UDP datagrams sent, by family."},
};

// The totals of these are rows of kTcpMetrics (TcpStack::counters() sums them).
constexpr FamilySeries<tcp::TcpFamilyCounters> kTcpFamilyMetrics[] = {
    {&tcp::TcpFamilyCounters::segments_in, nullptr,
     "wirespeed_tcp_received_segments_by_family_total",
     "TCP segments received by connections and listeners, by family."},
    {&tcp::TcpFamilyCounters::segments_out, nullptr, "wirespeed_tcp_sent_segments_by_family_total",
     "TCP segments sent, by family."},
    {&tcp::TcpFamilyCounters::resets_sent, nullptr, "wirespeed_tcp_resets_sent_by_family_total",
     "RST segments sent, by family."},
    {&tcp::TcpFamilyCounters::resets_received, nullptr,
     "wirespeed_tcp_resets_received_by_family_total",
     "Acceptable RST segments received, by family."},
    {&tcp::TcpFamilyCounters::connections_opened, nullptr,
     "wirespeed_tcp_active_opens_by_family_total", "Connections opened by us, by family."},
    {&tcp::TcpFamilyCounters::connections_accepted, nullptr,
     "wirespeed_tcp_passive_opens_by_family_total", "Connections accepted, by family."},
    {&tcp::TcpFamilyCounters::connections_established, nullptr,
     "wirespeed_tcp_established_by_family_total",
     "Connections that reached ESTABLISHED (opened or accepted), by family."},
};

// Per core, labelled core.
constexpr FieldSeries<CoreTotals> kCoreMetrics[] = {
    {&CoreTotals::busy_ns, "wirespeed_core_busy_seconds_total",
     "Time the core spent on loop iterations that did work.", MetricType::kCounter, 1e-9},
    {&CoreTotals::idle_ns, "wirespeed_core_idle_seconds_total",
     "Time the core spent polling empty queues or sleeping.", MetricType::kCounter, 1e-9},
    {&CoreTotals::loops, "wirespeed_core_loops_total", "Iterations of the core's pipeline loop."},
    {&CoreTotals::frames, "wirespeed_core_received_frames_total",
     "Frames the core's stack received (its own and those handed to it)."},
    {&CoreTotals::connections, "wirespeed_core_connections_total",
     "TCP connections the core opened or accepted."},
    {&CoreTotals::handed_out, "wirespeed_core_redirected_out_frames_total",
     "Frames the core received for a flow another core owns and "
     "handed to that core (software RSS)."},
    {&CoreTotals::handed_in, "wirespeed_core_redirected_in_frames_total",
     "Frames of the core's own flows that another core received and "
     "handed to it (software RSS)."},
};

// TcpState values from kSynSent on, in order.
constexpr std::string_view kTcpStates[] = {"syn_sent",   "syn_received", "established",
                                           "fin_wait_1", "fin_wait_2",   "close_wait",
                                           "closing",    "last_ack",     "time_wait"};
static_assert(static_cast<size_t>(tcp::TcpState::kSynSent) + std::size(kTcpStates) <=
              tcp::kTcpStateCount);

// In tcp::RecoveryKind order.
constexpr std::string_view kRecoveryKindNames[] = {"fast", "rack", "tlp", "rto", "spurious"};
static_assert(std::size(kRecoveryKindNames) == tcp::kRecoveryKinds);

constexpr const char* kSynCookieHelp =
    "SYN cookies: SYN,ACKs sent with one, ACKs that returned "
    "a valid one, ACKs whose cookie was forged or expired.";

// IPv4 reassembly (stack/iface/reassembly.hpp): the table's bounded memory and what became
// of the datagrams it held.
constexpr FieldSeries<ReassemblyStats> kReassemblyMetrics[] = {
    {&ReassemblyStats::entries_in_use, "wirespeed_ipv4_reassembly_entries",
     "IPv4 datagrams in reassembly (at most the table size per core).", MetricType::kGauge},
    {&ReassemblyStats::held_bytes, "wirespeed_ipv4_reassembly_held_bytes",
     "Fragment payload bytes held for datagrams in reassembly.", MetricType::kGauge},
    {&ReassemblyStats::buffer_bytes, "wirespeed_ipv4_reassembly_buffer_bytes",
     "Reassembly buffer memory allocated (kept for reuse; bounded by the table size).",
     MetricType::kGauge},
    {&ReassemblyStats::fragments_in, "wirespeed_ipv4_reassembly_fragments_total",
     "IPv4 fragments received for reassembly."},
    {&ReassemblyStats::reassembled, "wirespeed_ipv4_reassembled_datagrams_total",
     "IPv4 datagrams reassembled from fragments."},
    {&ReassemblyStats::timed_out, "wirespeed_ipv4_reassembly_timeouts_total",
     "Datagrams freed incomplete at the reassembly timeout."},
    {&ReassemblyStats::evicted, "wirespeed_ipv4_reassembly_evictions_total",
     "Datagrams in progress evicted by a newer one from a full table."},
};

constexpr FieldSeries<tcp::TcpCounters> kTcpMetrics[] = {
    {&tcp::TcpCounters::segments_in, "wirespeed_tcp_received_segments_total",
     "TCP segments received by connections and listeners.", MetricType::kCounter},
    {&tcp::TcpCounters::segments_out, "wirespeed_tcp_sent_segments_total", "TCP segments sent.",
     MetricType::kCounter},
    {&tcp::TcpCounters::resets_sent, "wirespeed_tcp_resets_sent_total", "RST segments sent.",
     MetricType::kCounter},
    {&tcp::TcpCounters::resets_received, "wirespeed_tcp_resets_received_total",
     "Acceptable RST segments received.", MetricType::kCounter},
    {&tcp::TcpCounters::challenge_acks, "wirespeed_tcp_challenge_acks_total",
     "Challenge ACKs sent (RFC 5961).", MetricType::kCounter},
    {&tcp::TcpCounters::challenge_acks_limited, "wirespeed_tcp_challenge_acks_limited_total",
     "Challenge ACKs not sent: over the second's randomised budget (RFC 5961 section 7).",
     MetricType::kCounter},
    {&tcp::TcpCounters::unacceptable_acks_limited, "wirespeed_tcp_unacceptable_acks_limited_total",
     "ACKs not sent in reply to an unacceptable segment without data: at most one per "
     "connection or TIME_WAIT record per 500 ms (RFC 5961 section 7).",
     MetricType::kCounter},
    {&tcp::TcpCounters::connections_opened, "wirespeed_tcp_active_opens_total",
     "Connections opened by us.", MetricType::kCounter},
    {&tcp::TcpCounters::connections_accepted, "wirespeed_tcp_passive_opens_total",
     "Connections accepted.", MetricType::kCounter},
    {&tcp::TcpCounters::connections_closed, "wirespeed_tcp_closed_total",
     "Connections closed (any reason).", MetricType::kCounter},
    {&tcp::TcpCounters::timeouts, "wirespeed_tcp_timeouts_total",
     "Connections dropped after retransmission timeouts.", MetricType::kCounter},
    {&tcp::TcpCounters::fast_retransmits, "wirespeed_tcp_fast_retransmits_total",
     "Fast retransmits / recovery episodes.", MetricType::kCounter},
    {&tcp::TcpCounters::rto_fired, "wirespeed_tcp_rto_expirations_total",
     "Retransmission timer expirations.", MetricType::kCounter},
    {&tcp::TcpCounters::acks_repeated, "wirespeed_tcp_acks_repeated_total",
     "Pure ACKs sent once more after a silence while the path showed loss (the first most "
     "likely lost).",
     MetricType::kCounter},
    {&tcp::TcpCounters::paws_reordered_accepted, "wirespeed_tcp_paws_reordered_accepted_total",
     "Segments of new data with a timestamp up to 1000 ticks older than the last one "
     "recorded, taken instead of dropped by PAWS: reordering held them back.",
     MetricType::kCounter},
    {&tcp::TcpCounters::zero_window_probes, "wirespeed_tcp_zero_window_probes_total",
     "Zero-window probes sent.", MetricType::kCounter},
    {&tcp::TcpCounters::keepalive_probes, "wirespeed_tcp_keepalive_probes_total",
     "Keepalive probes sent.", MetricType::kCounter},
    {&tcp::TcpCounters::time_wait_reused, "wirespeed_tcp_time_wait_reused_total",
     "TIME_WAIT connections reused thanks to timestamps.", MetricType::kCounter},
    {&tcp::TcpCounters::time_wait_overflow, "wirespeed_tcp_time_wait_overflow_total",
     "Connections closed without TIME_WAIT: tcp.time_wait_max TIME_WAIT blocks were held.",
     MetricType::kCounter},
    {&tcp::TcpCounters::tso_super_segments, "wirespeed_tcp_tso_super_segments_total",
     "TCP segments sent as TSO super-segments (each cut into MSS-sized segments by the port).",
     MetricType::kCounter},
    {&tcp::TcpCounters::rx_header_pullups, "wirespeed_tcp_header_pullups_total",
     "TCP headers that straddled mbufs and were copied into a header buffer.",
     MetricType::kCounter},
    {&tcp::TcpCounters::rx_bytes_direct, "wirespeed_tcp_received_direct_bytes_total",
     "In-order payload bytes the application consumed straight from received packets.",
     MetricType::kCounter},
    {&tcp::TcpCounters::rx_bytes_buffered, "wirespeed_tcp_received_buffered_bytes_total",
     "Payload bytes copied into receive buffers (not consumed at once, or out of order).",
     MetricType::kCounter},
    {&tcp::TcpCounters::rx_bytes_held, "wirespeed_tcp_received_held_bytes_total",
     "Payload bytes not consumed at once and kept in their receive mbufs instead of copied.",
     MetricType::kCounter},
    {&tcp::TcpCounters::rx_held_compacted, "wirespeed_tcp_received_held_copied_bytes_total",
     "Held payload bytes copied into receive buffers later (a partial read with more queued, "
     "or the mbuf pool running low).",
     MetricType::kCounter},
    {&tcp::TcpCounters::rx_hold_refused, "wirespeed_tcp_receive_holds_refused_total",
     "Holds refused because the mbuf pool ran low or its hold budget was spent (copied).",
     MetricType::kCounter},
    {&tcp::TcpCounters::rx_held_pieces, "wirespeed_tcp_received_held_frames",
     "Received frames whose mbufs TCP holds now for unread bytes.", MetricType::kGauge},
    {&tcp::TcpCounters::output_no_buffer, "wirespeed_tcp_output_no_buffer_total",
     "Segments not sent for lack of transmit buffers.", MetricType::kCounter},
    {&tcp::TcpCounters::rcv_buffer_sum, "wirespeed_tcp_receive_buffer_bytes",
     "Sum of the connections' (autotuned) receive buffer sizes.", MetricType::kGauge},
    {&tcp::TcpCounters::snd_buffer_sum, "wirespeed_tcp_send_buffer_bytes",
     "Sum of the connections' send buffer limits.", MetricType::kGauge},
    {&tcp::TcpCounters::bytes_buffered, "wirespeed_tcp_buffered_bytes",
     "Payload bytes held in TCP send and receive buffers.", MetricType::kGauge},
    {&tcp::TcpCounters::memory_bytes, "wirespeed_tcp_memory_bytes",
     "Buffer memory allocated by TCP connections.", MetricType::kGauge},
    // Path MTU (stack/tcp/pmtu.cpp, docs/tcp.md).
    {&tcp::TcpCounters::pmtu_reductions, "wirespeed_tcp_pmtu_reductions_total",
     "Send MSS lowered by ICMP fragmentation-needed or black-hole detection.",
     MetricType::kCounter},
    {&tcp::TcpCounters::pmtu_increases, "wirespeed_tcp_pmtu_increases_total",
     "Send MSS raised by a successful probe or the recovery timer.", MetricType::kCounter},
    {&tcp::TcpCounters::pmtu_black_holes, "wirespeed_tcp_pmtu_black_holes_total",
     "Black holes detected (full-sized segments timed out repeatedly).", MetricType::kCounter},
    {&tcp::TcpCounters::pmtu_probes_sent, "wirespeed_tcp_pmtu_probes_sent_total",
     "Path MTU probe segments sent (RFC 4821).", MetricType::kCounter},
    {&tcp::TcpCounters::pmtu_probes_succeeded, "wirespeed_tcp_pmtu_probes_succeeded_total",
     "Path MTU probes acknowledged.", MetricType::kCounter},
    {&tcp::TcpCounters::pmtu_probes_failed, "wirespeed_tcp_pmtu_probes_failed_total",
     "Path MTU probes lost or refused by ICMP.", MetricType::kCounter},
    {&tcp::TcpCounters::pmtu_cache_hits, "wirespeed_tcp_pmtu_cache_hits_total",
     "Connections that started from a path MTU remembered for their destination.",
     MetricType::kCounter},
    {&tcp::TcpCounters::icmp_accepted, "wirespeed_tcp_icmp_accepted_total",
     "ICMP errors that matched a connection and were acted on.", MetricType::kCounter},
    {&tcp::TcpCounters::icmp_ignored_short, "wirespeed_tcp_icmp_ignored_short_total",
     "ICMP errors ignored: fewer than 8 bytes of the TCP header quoted.", MetricType::kCounter},
    {&tcp::TcpCounters::icmp_ignored_no_connection,
     "wirespeed_tcp_icmp_ignored_no_connection_total",
     "ICMP errors ignored: the quoted 4-tuple matches no connection.", MetricType::kCounter},
    {&tcp::TcpCounters::icmp_ignored_sequence, "wirespeed_tcp_icmp_ignored_sequence_total",
     "ICMP errors ignored: quoted sequence number not in flight (RFC 5927).", MetricType::kCounter},
    {&tcp::TcpCounters::icmp_ignored_mtu, "wirespeed_tcp_icmp_ignored_mtu_total",
     "Fragmentation-needed ignored: MTU not below the current one or the quoted length.",
     MetricType::kCounter},
    {&tcp::TcpCounters::retransmits, "wirespeed_tcp_retransmitted_segments_total",
     "TCP segments retransmitted.", MetricType::kCounter},
    // SYN cookies (RFC 4987 section 3.6; stack/tcp/syncookie.hpp), one series per result.
    {&tcp::TcpCounters::syncookies_sent,
     "wirespeed_tcp_syncookies_total",
     kSynCookieHelp,
     MetricType::kCounter,
     1.0,
     {"result", "sent"}},
    {&tcp::TcpCounters::syncookies_valid,
     "wirespeed_tcp_syncookies_total",
     kSynCookieHelp,
     MetricType::kCounter,
     1.0,
     {"result", "valid"}},
    {&tcp::TcpCounters::syncookies_invalid,
     "wirespeed_tcp_syncookies_total",
     kSynCookieHelp,
     MetricType::kCounter,
     1.0,
     {"result", "invalid"}},
};

// TX batch pipelines (docs/pipeline.md): one per TCP connection of a length32 service;
// each core sums its connections, closed ones included, so counters never go backwards.
constexpr FieldSeries<pipeline::PipelineCounters> kPipelineMetrics[] = {
    {&pipeline::PipelineCounters::messages, "wirespeed_pipeline_messages_total",
     "Messages accepted by TX pipelines."},
    {&pipeline::PipelineCounters::bytes, "wirespeed_pipeline_payload_bytes_total",
     "Payload bytes of the messages accepted by TX pipelines (framing not included)."},
    {&pipeline::PipelineCounters::express, "wirespeed_pipeline_express_messages_total",
     "Express messages, which bypass batching mode."},
    {&pipeline::PipelineCounters::refused, "wirespeed_pipeline_refused_total",
     "Messages refused for backpressure (max_batches reached or no memory)."},
    {&pipeline::PipelineCounters::too_large, "wirespeed_pipeline_too_large_total",
     "Messages refused because they need more than max_batches batches."},
    {&pipeline::PipelineCounters::batches_allocated, "wirespeed_pipeline_batches_allocated_total",
     "Batches allocated (small and full-size)."},
    {&pipeline::PipelineCounters::small_allocated,
     "wirespeed_pipeline_small_batches_allocated_total",
     "Small (2 KiB) batches allocated, while recent batches were small."},
    {&pipeline::PipelineCounters::batches_freed, "wirespeed_pipeline_batches_freed_total",
     "Batches freed."},
    {&pipeline::PipelineCounters::spare_reuses, "wirespeed_pipeline_batch_reuses_total",
     "Batches taken from the spares instead of allocated."},
    {&pipeline::PipelineCounters::promotions, "wirespeed_pipeline_promotions_total",
     "Small batches outgrown by a message and moved into a full-size one."},
    {&pipeline::PipelineCounters::batching_entries, "wirespeed_pipeline_batching_entries_total",
     "Times a pipeline entered batching mode (more than one batch in flight)."},
    {&pipeline::PipelineCounters::backoff_ns, "wirespeed_pipeline_backoff_seconds_total",
     "Time between pulls spent in batching mode.", MetricType::kCounter, 1e-9},
    {&pipeline::PipelineCounters::pulls, "wirespeed_pipeline_pulls_total",
     "Pulls by the TX step that moved bytes into TCP."},
    {&pipeline::PipelineCounters::pulled_bytes, "wirespeed_pipeline_pulled_bytes_total",
     "Stream bytes (framing included) the TX step moved into TCP."},
};

// Per service, labelled service.
constexpr const char* kServiceMessagesHelp =
    "Messages (datagrams or framed messages) by direction.";
constexpr FieldSeries<ServiceCounters> kServiceMetrics[] = {
    {&ServiceCounters::rx_bytes, "wirespeed_service_received_bytes_total",
     "Payload bytes the service received."},
    {&ServiceCounters::tx_bytes, "wirespeed_service_sent_bytes_total",
     "Payload bytes the service sent."},
    {&ServiceCounters::rx_messages,
     "wirespeed_service_messages_total",
     kServiceMessagesHelp,
     MetricType::kCounter,
     1.0,
     {"direction", "received"}},
    {&ServiceCounters::tx_messages,
     "wirespeed_service_messages_total",
     kServiceMessagesHelp,
     MetricType::kCounter,
     1.0,
     {"direction", "sent"}},
    {&ServiceCounters::connections, "wirespeed_service_connections_total",
     "TCP connections the service accepted or opened."},
    {&ServiceCounters::send_failures, "wirespeed_service_send_failures_total",
     "Messages the service could not send."},
};

}  // namespace

// Registers series one after another; a refused one leaves ok() false and its reason in
// `error`, and registration goes on so every refusal is tried (the last one is reported).
class Metrics::Registrar {
 public:
  Registrar(stats::Writer& writer, std::string& error) : writer_(writer), error_(error) {}
  bool ok() const { return ok_; }

  stats::Slot add(const stats::MetricSpec& spec) {
    std::optional<stats::Slot> slot = writer_.register_metric(spec);
    if (slot) return *slot;
    ok_ = false;
    error_ = "stats: " + std::string(spec.name) + ": " + writer_.last_error();
    return {};
  }
  stats::Slot add(std::string_view name, std::string_view help, MetricType type,
                  std::vector<LabelPair> labels, Scope scope, double scale = 1.0) {
    stats::MetricSpec spec;
    spec.name = name;
    spec.help = help;
    spec.type = type;
    spec.labels = std::move(labels);
    spec.scope = scope;
    spec.scale = scale;
    return add(spec);
  }
  // One series per value of label `key`, in the order given.
  std::vector<stats::Slot> family(std::string_view name, std::string_view help, MetricType type,
                                  std::string_view key, std::span<const std::string_view> values,
                                  Scope scope) {
    std::vector<stats::Slot> slots;
    for (std::string_view v : values) slots.push_back(add(name, help, type, {{key, v}}, scope));
    return slots;
  }
  // Every row of a table, each with `labels` and then its own label.
  template <class Source, size_t N>
  void fields(const FieldSeries<Source> (&rows)[N], const std::vector<LabelPair>& labels,
              Scope scope, FieldSlots<Source>& out) {
    for (const FieldSeries<Source>& row : rows) {
      std::vector<LabelPair> l = labels;
      if (!row.label.key.empty()) l.push_back(row.label);
      out.emplace_back(row.field,
                       add(row.name, row.help, row.type, std::move(l), scope, row.scale));
    }
  }
  // Every row of a per-family table: its total (when named) and one series per family.
  template <class Source, size_t N>
  void families(const FamilySeries<Source> (&rows)[N], FamilySlots<Source>& out) {
    for (const FamilySeries<Source>& row : rows) {
      FamilySlot<Source> fs{row.field, std::nullopt, {}};
      if (row.total != nullptr) {
        // The total's help is the breakdown's without its last words.
        std::string_view h = row.help;
        std::string help(h.substr(0, h.rfind(", by family")));
        fs.total = add(row.total, help + ".", MetricType::kCounter, {}, Scope::kPerCoreSum);
      }
      for (size_t f = 0; f < kFamilies; ++f) {
        fs.by[f] = add(row.name, row.help, MetricType::kCounter, {{"family", kFamilyNames[f]}},
                       Scope::kPerCoreSum);
      }
      out.push_back(fs);
    }
  }

 private:
  stats::Writer& writer_;
  std::string& error_;
  bool ok_ = true;
};

std::optional<stats::Slot> Metrics::reg(const std::string& name, const std::string& help,
                                        stats::MetricType t, std::vector<stats::LabelPair> labels,
                                        stats::Scope scope, std::string& error, double scale) {
  Registrar r(writer_, error);
  stats::Slot slot = r.add(name, help, t, std::move(labels), scope, scale);
  if (!r.ok()) return std::nullopt;
  return slot;
}

bool Metrics::init(const config::Config& cfg, const std::vector<PortInfo>& ports,
                   std::string& error) {
  stats::WriterOptions opt;
  opt.lcore_ids = cfg.dataplane.lcores;
  if (!writer_.create(stats::segment_path(cfg.dataplane.file_prefix), opt)) {
    error = "stats segment: " + writer_.last_error();
    return false;
  }
  Registrar r(writer_, error);
  for (const auto& p : ports) register_port(r, cfg, p);
  for (const auto& pc : cfg.ports) {
    writer_.set_info("port." + pc.name + ".address", pc.address.to_string());
    std::string v6;
    for (const auto& a : pc.addresses6) v6 += (v6.empty() ? "" : " ") + a.to_string();
    if (!v6.empty()) writer_.set_info("port." + pc.name + ".ipv6_addresses", v6);
  }
  l4_seen_ = std::make_unique<std::atomic<bool>[]>(ports_.size());
  r.fields(kUnmapMetrics, {}, Scope::kGlobal, unmap_);
  writer_.set_info("unmap_guard.ordering",
                   unmap_guard::uses_membarrier() ? "membarrier" : "fence per iteration");
  register_core_series(r);
  for (const auto& s : cfg.services) register_service(r, s);
  const bool ok = register_ipsec(cfg, error) && r.ok();
  writer_.set_info("version", WS_VERSION);
  writer_.set_info("dpdk_version", WS_DPDK_VERSION);
  if (!ok) return false;
  if (!writer_.seal()) {
    error = "stats segment: " + writer_.last_error();
    return false;
  }
  return true;
}

void Metrics::register_port(Registrar& r, const config::Config& cfg, const PortInfo& p) {
  PortSlots ps;
  const std::vector<LabelPair> l{{"port", p.name}};
  r.fields(kPortCounters, l, Scope::kGlobal, ps.eth);
  const auto g = MetricType::kGauge;
  ps.mtu =
      r.add("wirespeed_port_mtu_bytes", "MTU the stack uses on the port.", g, l, Scope::kGlobal);
  ps.link_up =
      r.add("wirespeed_port_link_up", "1 when the port's link is up.", g, l, Scope::kGlobal);
  ps.pool_in_use =
      r.add("wirespeed_mempool_in_use", "Mbufs of the port's pool in use.", g, l, Scope::kGlobal);
  ps.pool_size = r.add("wirespeed_mempool_size", "Mbufs in the port's pool.", g, l, Scope::kGlobal);
  const auto queues = [&](uint16_t n, const char* name, const char* help) {
    std::vector<stats::Slot> slots;
    for (uint16_t q = 0; q < n && q < RTE_ETHDEV_QUEUE_STAT_CNTRS; ++q) {
      slots.push_back(r.add(name, help, MetricType::kCounter,
                            {{"port", p.name}, {"queue", std::to_string(q)}}, Scope::kGlobal));
    }
    return slots;
  };
  ps.q_rx_packets = queues(p.rx_queues, "wirespeed_queue_receive_packets_total",
                           "Packets received per RX queue.");
  ps.q_tx_packets = queues(p.tx_queues, "wirespeed_queue_transmit_packets_total",
                           "Packets transmitted per TX queue.");
  ps.l4_errors = r.add("wirespeed_port_l4_checksum_errors_total",
                       "TCP and UDP datagrams received on the port and dropped for a bad "
                       "checksum (part of tcp_bad_checksum and udp_bad_checksum).",
                       MetricType::kCounter, l, Scope::kPerCoreSum);
  ps.l4_hint = r.add("wirespeed_port_l4_checksum_hint",
                     "1 once an af_packet port has seen TCP/UDP checksum failures and the "
                     "data plane has logged their likely cause (a local peer's TX checksum "
                     "offload); the status screen shows the hint.",
                     g, l, Scope::kGlobal);
  if (p.driver == "net_af_packet") {
    for (const auto& pc : cfg.ports) {
      if (pc.name != p.name) continue;
      std::string iface = af_packet_iface(pc.device);
      auto d = std::make_shared<AfPacketDrops>();
      if (!iface.empty() && d->attach(iface)) ps.kernel_drops = std::move(d);
      ps.iface = iface;
      ps.hint = checksum_hint(iface, interface_driver(iface), find_veth_peer(iface));
      writer_.set_info("port." + p.name + ".l4_checksum_hint", ps.hint);
    }
  }
  register_ipv6(r, cfg, p, ps);
  ports_.push_back(std::move(ps));
  const std::string key = "port." + p.name + ".";
  writer_.set_info(key + "mac", p.mac.to_string());
  writer_.set_info(key + "device", p.device);
  writer_.set_info(key + "driver", p.driver);
  writer_.set_info(key + "mtu", std::to_string(p.mtu));
  writer_.set_info(key + "frame_buffers", p.chained ? "chained" : "whole");
  writer_.set_info(key + "mbuf_data_room", std::to_string(p.data_room));
  writer_.set_info(key + "tso", p.tso ? std::to_string(p.tx_offloads.tso_max) : std::string("off"));
}

namespace {
// In Stack::Ipv6AddrState order.
constexpr std::array<std::string_view, 3> kAddrStates = {"tentative", "preferred", "duplicate"};
}  // namespace

void Metrics::register_ipv6(Registrar& r, const config::Config& cfg, const PortInfo& p,
                            PortSlots& ps) {
  const config::PortConfig* pc = nullptr;
  for (const auto& c : cfg.ports) {
    if (c.name == p.name) pc = &c;
  }
  if (pc == nullptr || (pc->addresses6.empty() && !pc->gateway6)) return;
  ps.v6 = true;
  const Ipv6Addr ll = link_local_of(cfg, p.mac);
  writer_.set_info("port." + p.name + ".ipv6_link_local", Ipv6Cidr{ll, 64}.to_string());
  if (pc->gateway6) writer_.set_info("port." + p.name + ".gateway6", pc->gateway6->to_string());
  ps.v6_addrs.push_back(ll);
  for (const auto& a : pc->addresses6) ps.v6_addrs.push_back(a.addr);
  const auto g = MetricType::kGauge;
  const std::vector<LabelPair> l{{"port", p.name}};
  for (size_t i = 0; i < kAddrStates.size(); ++i) {
    const std::vector<LabelPair> ls{{"port", p.name}, {"state", kAddrStates[i]}};
    ps.v6_count[i] = r.add("wirespeed_ipv6_addresses",
                           "The port's IPv6 addresses (link-local included) by duplicate address "
                           "detection state, as the first core sees them.",
                           g, ls, Scope::kPerCoreSum);
    ps.v6_mask[i] = r.add("wirespeed_ipv6_address_state_mask",
                          "Which of the port's IPv6 addresses are in the state: bit 0 the "
                          "link-local address, bit i the i-th IPv6 entry of addresses (first "
                          "core). For the status screen.",
                          g, ls, Scope::kPerCoreSum);
  }
  ps.v6_router = r.add("wirespeed_ipv6_learned_router_iid",
                       "Interface identifier of the default router learned from router "
                       "advertisements (fe80::/64 plus it); 0 when none is. For the status "
                       "screen.",
                       g, l, Scope::kPerCoreSum);
}

void Metrics::update_ipv6(uint64_t* v, uint32_t core, const CoreSample& s) const {
  // The first core speaks for all: each runs DAD and learns routers from the same
  // frames, and a sum over cores of masks or addresses would mean nothing.
  if (core != 0) return;
  for (size_t i = 0; i < ports_.size() && i < s.ifaces.size(); ++i) {
    const PortSlots& ps = ports_[i];
    if (!ps.v6) continue;
    std::array<uint64_t, 3> count{}, mask{};
    for (size_t a = 0; a < ps.v6_addrs.size(); ++a) {
      const auto st = s.net->ipv6_address_state(s.ifaces[i], ps.v6_addrs[a]);
      if (!st) continue;
      ++count[static_cast<size_t>(*st)];
      if (a < 64) mask[static_cast<size_t>(*st)] |= uint64_t{1} << a;
    }
    for (size_t k = 0; k < count.size(); ++k) {
      v[ps.v6_count[k].offset] = count[k];
      v[ps.v6_mask[k].offset] = mask[k];
    }
    uint8_t b[16] = {};
    if (auto router = s.net->ipv6_learned_router(s.ifaces[i], s.now)) router->to_bytes(b);
    uint64_t iid = 0;
    for (size_t k = 8; k < 16; ++k) iid = (iid << 8) | b[k];
    v[ps.v6_router.offset] = iid;
  }
}

// The series every core writes: drops, stack, core, TCP and TX pipeline counters.
void Metrics::register_core_series(Registrar& r) {
  std::vector<std::string_view> reasons;
  for (size_t i = 0; i < kDropReasonCount; ++i) {
    reasons.push_back(drop_reason_name(static_cast<DropReason>(i)));
  }
  drops_ = r.family("wirespeed_drops_total", "Packets discarded by the stack, by reason.",
                    MetricType::kCounter, "reason", reasons, Scope::kPerCoreSum);
  r.fields(kStackMetrics, {}, Scope::kPerCoreSum, stack_);
  r.fields(kCoreMetrics, {}, Scope::kPerCoreLabeled, core_);
  tcp_states_ = r.family("wirespeed_tcp_connections", "TCP connections by state.",
                         MetricType::kGauge, "state", kTcpStates, Scope::kPerCoreSum);
  tcp_recovery_ = r.family("wirespeed_tcp_recovery_total",
                           "TCP loss recovery events by kind (docs/tcp.md, Loss recovery).",
                           MetricType::kCounter, "kind", kRecoveryKindNames, Scope::kPerCoreSum);
  r.fields(kTcpMetrics, {}, Scope::kPerCoreSum, tcp_);
  r.families(kStackFamilyMetrics, stack_family_);
  r.families(kTcpFamilyMetrics, tcp_family_);
  for (std::string_view st : kTcpStates) {
    std::array<stats::Slot, kFamilies> by{};
    for (size_t f = 0; f < kFamilies; ++f) {
      by[f] = r.add("wirespeed_tcp_connections_by_family",
                    "TCP connections by state and address family.", MetricType::kGauge,
                    {{"family", kFamilyNames[f]}, {"state", st}}, Scope::kPerCoreSum);
    }
    tcp_family_states_.push_back(by);
  }
  r.fields(kReassemblyMetrics, {}, Scope::kPerCoreSum, reasm_);
  r.fields(kPipelineMetrics, {}, Scope::kPerCoreSum, pipeline_);
  // Gauges, 32-bit in PipelineCounters.
  pipeline_live_ =
      r.add("wirespeed_pipeline_batches", "Batches allocated now (queued, open or kept as spares).",
            MetricType::kGauge, {}, Scope::kPerCoreSum);
  pipeline_in_use_ = r.add("wirespeed_pipeline_batches_in_use",
                           "Batches holding bytes not yet pulled, or open for appending.",
                           MetricType::kGauge, {}, Scope::kPerCoreSum);
}

void Metrics::register_service(Registrar& r, const config::ServiceConfig& s) {
  ServiceSlots ss;
  const std::vector<LabelPair> l{{"service", s.name}};
  r.fields(kServiceMetrics, l, Scope::kPerCoreSum, ss.fields);
  if (s.kind == config::ServiceKind::ping) {
    stats::MetricSpec h;
    h.name = "wirespeed_ping_rtt_seconds";
    h.help = "Round-trip times measured by ping services.";
    h.type = MetricType::kHistogram;
    h.labels = l;
    h.scope = Scope::kPerCoreSum;
    h.histogram.scale = 1e-9;  // observed in nanoseconds
    h.histogram.first = 10;    // ~1 us
    h.histogram.last = 34;     // ~17 s
    ss.rtt = r.add(h);
  }
  services_.push_back(std::move(ss));
  writer_.set_info("service." + s.name + ".kind", std::string(config::to_string(s.kind)));
  writer_.set_info("service." + s.name + ".protocol", std::string(config::to_string(s.protocol)));
}

void Metrics::update_core(uint32_t core, const CoreSample& s) {
  if (!writer_.sealed()) return;
  uint64_t* v = writer_.core_values(core);
  if (s.esp != nullptr) update_ipsec(v, *s.esp);
  for (size_t r = 0; r < drops_.size(); ++r) v[drops_[r].offset] = s.drops->count[r];
  copy_fields(v, *s.stack, stack_);
  copy_families(v, *s.stack, stack_family_);
  CoreTotals totals{s.busy_ns, s.idle_ns, s.loops, s.stack->rx_frames, 0, 0, 0};
  if (s.tcp != nullptr) {
    tcp::TcpCounters t = s.tcp->counters();
    for (size_t i = 0; i < tcp_states_.size(); ++i) {
      v[tcp_states_[i].offset] = t.state[static_cast<size_t>(tcp::TcpState::kSynSent) + i];
    }
    for (size_t i = 0; i < tcp_recovery_.size(); ++i) v[tcp_recovery_[i].offset] = t.recovery[i];
    copy_fields(v, t, tcp_);
    copy_families(v, t.family, tcp_family_);
    for (size_t i = 0; i < tcp_family_states_.size(); ++i) {
      const FamilyCount& n = t.family.state[static_cast<size_t>(tcp::TcpState::kSynSent) + i];
      for (size_t f = 0; f < kFamilies; ++f) v[tcp_family_states_[i][f].offset] = n[f];
    }
    totals.connections = t.connections_opened + t.connections_accepted;
  }
  if (s.steer != nullptr) {
    totals.handed_out = s.steer->handed_out();
    totals.handed_in = s.steer->handed_in();
  }
  copy_fields(v, totals, core_);
  for (size_t i = 0; i < ports_.size() && i < s.ports.size(); ++i) {
    if (s.ports[i] == nullptr) continue;
    uint64_t n = s.ports[i]->l4_checksum_errors;
    v[ports_[i].l4_errors.offset] = n;
    if (n != 0) l4_seen_[i].store(true, std::memory_order_relaxed);
  }
  if (s.reassembly != nullptr) copy_fields(v, *s.reassembly, reasm_);
  if (s.net != nullptr) update_ipv6(v, core, s);
  pipeline::PipelineCounters pl;
  for (const Service* svc : s.services) {
    if (svc != nullptr) svc->add_pipeline_counters(pl);
  }
  copy_fields(v, pl, pipeline_);
  v[pipeline_live_.offset] = pl.batches_live;
  v[pipeline_in_use_.offset] = pl.batches_in_use;
  for (size_t i = 0; i < services_.size() && i < s.services.size(); ++i) {
    if (s.services[i] != nullptr) update_service(v, services_[i], *s.services[i]);
  }
  writer_.publish(core);
}

void Metrics::update_service(uint64_t* v, const ServiceSlots& slots, const Service& svc) const {
  copy_fields(v, svc.counters(), slots.fields);
  const LatencyHistogram* h = svc.rtt();
  if (!slots.rtt || h == nullptr) return;
  uint64_t* w = v + slots.rtt->offset;
  for (uint32_t b = 0; b < stats::kHistogramBuckets; ++b) w[b] = 0;
  h->export_log2([w](uint32_t b, uint64_t n) {
    w[b < stats::kHistogramBuckets ? b : stats::kHistogramBuckets - 1] += n;
  });
  w[stats::kHistogramSumWord] = h->sum();
  w[stats::kHistogramCountWord] = h->count();
}

void Metrics::update_ports(const std::vector<PortInfo>& ports) {
  if (!writer_.sealed()) return;
  uint64_t* g = writer_.global_values();
  for (size_t i = 0; i < ports.size() && i < ports_.size(); ++i) update_port(g, i, ports[i]);
  copy_fields(g, unmap_guard::stats(), unmap_);
  writer_.publish_global();
}

void Metrics::update_port(uint64_t* g, size_t i, const PortInfo& p) {
  PortSlots& s = ports_[i];
  rte_eth_stats st{};
  if (rte_eth_stats_get(p.port_id, &st) == 0) {
    if (s.kernel_drops) st.imissed += s.kernel_drops->poll();
    copy_fields(g, st, s.eth);
    for (size_t q = 0; q < s.q_rx_packets.size(); ++q)
      g[s.q_rx_packets[q].offset] = st.q_ipackets[q];
    for (size_t q = 0; q < s.q_tx_packets.size(); ++q)
      g[s.q_tx_packets[q].offset] = st.q_opackets[q];
  }
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(p.port_id, &link) == 0) g[s.link_up.offset] = link.link_status;
  g[s.mtu.offset] = p.mtu;
  if (!s.hint.empty() && !s.hint_given && l4_seen_[i].load(std::memory_order_relaxed)) {
    // Once per port: the counter says that it happens, the line says why.
    s.hint_given = true;
    g[s.l4_hint.offset] = 1;
    std::fprintf(stderr, "wirespeed: port %s (af_packet on %s): TCP/UDP checksum failures; %s\n",
                 p.name.c_str(), s.iface.c_str(), s.hint.c_str());
  }
  g[s.pool_size.offset] = p.pool_size;
  g[s.pool_in_use.offset] = p.pool != nullptr ? rte_mempool_in_use_count(p.pool) : 0;
}

void Metrics::shutdown() {
  if (writer_.sealed()) writer_.remove();
}

}  // namespace ws::dp
