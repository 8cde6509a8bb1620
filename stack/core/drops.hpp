// Every packet the stack discards is counted under a named reason. The names are
// the `reason` label of wirespeed_drops_total, so they are part of the contract:
// add reasons freely, never rename one. Keep kDropReasonNames in drops.cpp in step.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ws {

enum class DropReason : uint16_t {
  // Ethernet
  kEthTruncated,
  kEthNotForUs,
  kEthUnknownType,
  kVlanUnsupported,
  // ARP
  kArpTruncated,
  kArpBadFormat,
  kArpNotForUs,
  kArpQueueFull,
  kArpResolveFailed,
  // IPv4 input, in the order of the checks (RFC 1122 section 3.2.1)
  kIpv4Truncated,
  kIpv4BadVersion,
  kIpv4BadIhl,
  kIpv4BadTotalLength,
  kIpv4BadChecksum,
  kIpv4BadSource,
  kIpv4NotForUs,
  kIpv4TtlExpired,
  kIpv4Fragment,
  kIpv4UnknownProtocol,
  kIpv4NoRoute,
  kIpv4Options,
  // ICMP
  kIcmpTruncated,
  kIcmpBadChecksum,
  kIcmpUnsupportedType,
  kIcmpRateLimited,
  // UDP
  kUdpTruncated,
  kUdpBadLength,
  kUdpBadChecksum,
  kUdpPortUnreachable,
  kUdpSocketFull,
  // TCP
  kTcpTruncated,
  kTcpBadDataOffset,
  kTcpBadChecksum,
  kTcpBadOptions,
  kTcpNoListener,
  kTcpSynQueueFull,
  kTcpAcceptQueueFull,
  kTcpOutOfWindow,
  kTcpBadAck,
  kTcpPawsRejected,
  kTcpRstInvalid,
  kTcpNoConnection,
  kTcpReceiveBufferFull,
  kTcpNoMemory,
  kTcpBadFlags,
  // Buffers / transmit
  kNoMbuf,
  kTxQueueFull,
  kFrameTooLong,
  // IPv4 reassembly (RFC 791 3.2, RFC 5722-style overlap rules)
  kIpv4ReassemblyTimeout,
  kIpv4ReassemblyOverlap,
  kIpv4ReassemblyTableFull,
  kIpv4ReassemblyTooManyFragments,
  kIpv4ReassemblyTooLarge,
  // A received mbuf chain of more segments than the stack's packet view holds
  // (PacketView::kMaxSegments), dropped by the data plane before parsing.
  kRxTooManySegments,
  // Software RSS (dataplane/steering.hpp): a frame for another core's flow that the ring
  // to that core had no room for, or an ARP reply whose copy for another core found no mbuf.
  kSteerRingFull,
  // An ACK to a listener whose SYN cookie was forged, damaged or expired (RFC 4987 3.6).
  kTcpSynCookieInvalid,
  // A RST for a segment to no connection, not sent: over tcp.rst_rate (RFC 5961 7).
  kTcpRstRateLimited,
  // A RST in TIME_WAIT, ignored (RFC 1337).
  kTcpTimeWaitRst,
  // A new connection refused: tcp.max_connections reached on this core.
  kTcpMaxConnections,
  // IPsec ESP (RFC 4303); per-SA detail in wirespeed_ipsec_errors_total
  kIpsecNoSa,           // no inbound SA for the SPI and sender
  kIpsecPolicy,         // the policy forbids it: plaintext from a protected peer, discard
  kIpsecMalformed,      // too short, misaligned, or not what the SA carries
  kIpsecSaError,        // authentication, replay, padding, or sequence space spent
  kIpsecSeqUnreserved,  // the outbound SA's reserved sequence numbers ran out
  // A new connection's SYN beyond tcp.syn_burst_budget while receive bursts keep coming back
  // full and handshakes pile up (tcp.syn_shed_half_open): the core is behind, and its time goes
  // to the connections it has (shedding at the SYN).
  kTcpSynShed,
  // IPv6 input (RFC 8200), in the order of the checks
  kIpv6Truncated,
  kIpv6BadVersion,
  kIpv6BadPayloadLength,
  kIpv6BadSource,
  kIpv6NotForUs,
  kIpv6ExtTruncated,
  kIpv6ExtChainTooLong,
  kIpv6ExtBadOrder,
  kIpv6UnknownOption,
  kIpv6RoutingType0,
  kIpv6RoutingHeader,
  kIpv6UnknownNextHeader,
  kIpv6FragmentBadLength,
  kIpv6FragmentIncompleteChain,
  kIpv6Fragment,
  // ICMPv6 (RFC 4443) and neighbour discovery (RFC 4861)
  kIcmpv6Truncated,
  kIcmpv6BadChecksum,
  kIcmpv6UnsupportedType,
  kIcmpv6RateLimited,
  kNdpBadHopLimit,
  kNdpMalformed,
  kNdpBadOptions,
  kNdpNotForUs,
  kNdpQueueFull,
  kNdpResolveFailed,
  kIpv6NoRoute,
  // IPv6 reassembly (RFC 8200 4.5, RFC 5722)
  kIpv6ReassemblyTimeout,
  kIpv6ReassemblyOverlap,
  kIpv6ReassemblyTableFull,
  kIpv6ReassemblyTooManyFragments,
  kIpv6ReassemblyTooLarge,
  // A datagram in progress evicted from a full reassembly table by a newer one.
  kIpv4ReassemblyEvicted,
  // An IPv4 packet whose total length runs past the frame although the frame is longer
  // than the interface's MTU: cut short by the receive path (af_packet's ring after the
  // kernel reassembled fragments), not malformed by its sender.
  kRxTruncated,
  // Router advertisements (RFC 4861 6.1.2): valid ones while ipv6.accept_ra is off, and
  // ones from a source that is not link-local. A wrong hop limit, code, length or option
  // counts under ndp_bad_hop_limit, ndp_malformed and ndp_bad_options as for NS/NA.
  kNdpRaNotAccepted,
  kNdpRaBadSource,
  // An ICMPv6 error that quotes no packet of a flow we have (a forged or late Packet Too
  // Big, unreachable or time exceeded): counted, no effect.
  kIcmpv6ErrorUnmatched,
  // An MLD query (RFC 3810 5.1.14) from a source that is not link-local or with a hop
  // limit other than 1.
  kMldBadQuery,
  // A UDP datagram over IPv6 with a zero checksum: the checksum is mandatory there
  // (RFC 8200 8.1; no RFC 6936 tunnel exception is configured).
  kUdp6ZeroChecksum,
  kCount
};

inline constexpr size_t kDropReasonCount = static_cast<size_t>(DropReason::kCount);

// Snake-case name used in metrics and logs.
std::string_view drop_reason_name(DropReason r);

// True for reasons that discard a received frame; false for those that discard one the
// stack was sending (no buffer, a full TX queue, an unresolved next hop) or that expire
// state. A packet capture of drops attributes only the former to the frame being read.
bool is_receive_drop(DropReason r);

// Per-core drop counters: plain integers written only by their owning core.
struct alignas(64) DropCounters {
  std::array<uint64_t, kDropReasonCount> count{};
  // Drop events so far and the reason of the latest: the data plane compares `events`
  // around the handling of one frame to learn whether, and why, that frame was dropped.
  uint64_t events = 0;
  DropReason last = DropReason::kCount;
  void add(DropReason r, uint64_t n = 1) {
    count[static_cast<size_t>(r)] += n;
    ++events;
    last = r;
  }
  uint64_t get(DropReason r) const { return count[static_cast<size_t>(r)]; }
  uint64_t total() const {
    uint64_t t = 0;
    for (auto c : count) t += c;
    return t;
  }
};

}  // namespace ws
