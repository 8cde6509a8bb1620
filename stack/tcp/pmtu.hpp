// Path MTU of one connection: ICMP "fragmentation needed" (RFC 1191, validated as
// RFC 5927 asks), recovery after a timeout (RFC 1191 section 6.3), and, for paths that
// filter ICMP, black-hole detection and packetization-layer probing (RFC 4821,
// RFC 8899). The logic lives in pmtu.cpp as Tcb members; this is its state.
//
// Sizes here are MSS values in the sense of advertised_mss(): a path MTU less the fixed
// IP and TCP headers of the connection's family (40 bytes over IPv4, 60 over IPv6). The options
// every segment carries (timestamps) are taken off later by effective_send_mss().
#pragma once

#include <cstdint>

#include "stack/core/seqnum.hpp"
#include "stack/core/time.hpp"
#include "stack/tcp/mss.hpp"

namespace ws::tcp {

// The floor: an MTU of 576 (MSS 536). RFC 1191 section 3 allows 68, but every IPv4 host
// must accept 576-byte datagrams (RFC 1122 3.3.2, RFC 791), and an ICMP message quoting
// a tiny MTU is a known way to cripple a connection (RFC 5927 section 7.2). Linux keeps
// a similar floor (min_pmtu 552).
inline constexpr uint32_t kPmtuFloorMtu = 576;
inline constexpr uint32_t kPmtuFloorMss = kPmtuFloorMtu - kIpv4HeaderLen - kTcpHeaderLen;
// Where black-hole detection restarts the search: RFC 8899 section 5.1.2 recommends
// BASE_PLPMTU = 1200 bytes for IPv4, a size nearly every path carries.
inline constexpr uint32_t kPmtuBaseMss = 1200 - kIpv4HeaderLen - kTcpHeaderLen;
// Over IPv6 every link carries 1280 bytes (RFC 8200 section 5), so the floor is that
// MTU less the 40-byte IPv6 header, and RFC 8899 section 5.1.2 makes it BASE_PLPMTU too:
// black-hole detection falls back to it directly and probes upward from there.
inline constexpr uint32_t kPmtuFloorMss6 = kIpv6MinMtu - kIpv6HeaderLen - kTcpHeaderLen;
inline constexpr uint32_t kPmtuBaseMss6 = kPmtuFloorMss6;
constexpr uint32_t pmtu_floor_mss(bool ipv4) { return ipv4 ? kPmtuFloorMss : kPmtuFloorMss6; }
constexpr uint32_t pmtu_base_mss(bool ipv4) { return ipv4 ? kPmtuBaseMss : kPmtuBaseMss6; }
// The search stops once the untested range is narrower than this (RFC 4821 section 7.2
// leaves the granularity to the implementation; a few bytes more are not worth probes).
inline constexpr uint32_t kPmtuSearchDone = 16;
// Consecutive retransmission timeouts of a full-sized segment, without any ICMP and with
// no full-sized segment SACKed, after which the path is taken to be a black hole
// (RFC 4821 section 7.7; RFC 8899 4.3).
inline constexpr uint32_t kPmtuBlackHoleRtos = 2;
// A probed size fails only when this many probes of it in a row are lost (RFC 8899
// section 5.1.2, MAX_PROBES): on a lossy path a single lost probe says little, and
// taking it as failure capped the search below the size the path carries. An ICMP
// message about a probe is conclusive at once.
inline constexpr uint32_t kPmtuMaxProbes = 3;

// RFC 1191 section 7: the plateau just below `mtu`, for routers that do not report the
// next-hop MTU (the field is zero). Never below 68.
uint32_t mtu_plateau_below(uint32_t mtu);

// What became of an ICMP "fragmentation needed" that passed the RFC 5927 checks.
enum class IcmpVerdict : uint8_t { kAccepted, kMtuNotLower };

// What output() does about a probe: none due (send normally), one was sent, or one is
// due but must wait for the flight to drain (send nothing more now).
enum class ProbeStep : uint8_t { kNone, kSent, kWait };

enum class PmtuLoweredBy : uint8_t { kNone, kIcmp, kBlackHole };

struct PmtuState {
  uint32_t mss = kPmtuFloorMss;          // what segments are sized from now
  uint32_t search_high = kPmtuFloorMss;  // largest size not known to fail
  PmtuLoweredBy lowered_by = PmtuLoweredBy::kNone;
  // RFC 1191 6.3 / RFC 8899 5.2 (PMTU_RAISE_TIMER): when to try a larger size again.
  Instant raise_at = Instant::never();
  // The probe in flight (RFC 4821 section 7.4): one segment of probe_mss bytes.
  bool probe_out = false;
  bool emitting_probe = false;  // emit() may size this segment to probe_mss
  uint32_t probe_mss = 0;
  SeqNum probe_seq, probe_end;
  // A failed probe's bytes are resent at the old size; no new probe before they are
  // acknowledged.
  SeqNum hold_until;
  uint32_t black_hole_rtos = 0;
  // Consecutive lost probes of lost_probe_mss (kPmtuMaxProbes).
  uint32_t lost_probe_mss = 0;
  uint32_t lost_probes = 0;

  // The bound emit() applies to one segment (header options included).
  uint32_t emit_cap() const { return emitting_probe ? probe_mss : mss; }
  bool searching() const { return search_high >= mss + kPmtuSearchDone; }
  // The ceiling (the port's MTU or the peer's MSS) first: most paths carry it, and a
  // search after black-hole detection on a merely lossy path ends in one probe. Below
  // it, binary search between the size known to work and the largest not known to fail
  // (RFC 8899 section 5.3.2 leaves the search method open).
  uint32_t next_probe(uint32_t ceiling) const {
    return search_high >= ceiling ? search_high : mss + (search_high - mss + 1) / 2;
  }
};

}  // namespace ws::tcp
