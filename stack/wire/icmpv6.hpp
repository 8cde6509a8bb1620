// ICMPv6 (RFC 4443) and the neighbour discovery messages carried in it (RFC 4861
// section 4): the common 4-byte header, neighbour solicitation and advertisement,
// and the options that follow them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "stack/core/addr.hpp"
#include "stack/core/bytes.hpp"

namespace ws::wire {

inline constexpr uint8_t kIcmpv6DestUnreachable = 1;
inline constexpr uint8_t kIcmpv6PacketTooBig = 2;
inline constexpr uint8_t kIcmpv6TimeExceeded = 3;
inline constexpr uint8_t kIcmpv6ParamProblem = 4;
inline constexpr uint8_t kIcmpv6EchoRequest = 128;
inline constexpr uint8_t kIcmpv6EchoReply = 129;
inline constexpr uint8_t kIcmpv6RouterSolicit = 133;
inline constexpr uint8_t kIcmpv6RouterAdvert = 134;
inline constexpr uint8_t kIcmpv6NeighborSolicit = 135;
inline constexpr uint8_t kIcmpv6NeighborAdvert = 136;
inline constexpr uint8_t kIcmpv6Redirect = 137;
inline constexpr uint8_t kIcmpv6MldQuery = 130;     // RFC 3810 5.1 (and MLDv1's)
inline constexpr uint8_t kIcmpv6Mldv2Report = 143;  // RFC 3810 5.2

// Destination unreachable codes (RFC 4443 3.1).
inline constexpr uint8_t kIcmpv6CodeNoRoute = 0;
inline constexpr uint8_t kIcmpv6CodeAddressUnreachable = 3;
inline constexpr uint8_t kIcmpv6CodePortUnreachable = 4;
// Time exceeded: fragment reassembly time exceeded (RFC 4443 3.3).
inline constexpr uint8_t kIcmpv6CodeReassemblyTimeout = 1;
// Error messages have types 0..127 (RFC 4443 2.1).
constexpr bool is_icmpv6_error(uint8_t type) { return type < 128; }

class Icmpv6View {
 public:
  static constexpr size_t kHeaderLen = 4;
  static constexpr size_t kEchoHeaderLen = 8;  // with identifier and sequence number

  static std::optional<Icmpv6View> parse(std::span<const uint8_t> b) {
    if (b.size() < kHeaderLen) return std::nullopt;
    return Icmpv6View(b);
  }
  uint8_t type() const { return b_[0]; }
  uint8_t code() const { return b_[1]; }
  uint16_t checksum() const { return load_be16(b_.data() + 2); }
  // Bytes 4..7: the echo identifier and sequence, the MTU of a Packet Too Big, the
  // pointer of a Parameter Problem, the flags of a neighbour advertisement. The caller
  // checks that size() >= 8.
  uint32_t word1() const { return load_be32(b_.data() + 4); }
  size_t size() const { return b_.size(); }
  std::span<const uint8_t> bytes() const { return b_; }

 private:
  explicit Icmpv6View(std::span<const uint8_t> b) : b_(b) {}
  std::span<const uint8_t> b_;
};

// Neighbour solicitation and advertisement (RFC 4861 4.3, 4.4): 4 bytes of header,
// 4 of reserved / flags, the 16-byte target, then options.
inline constexpr size_t kNdpNeighborLen = 24;
inline constexpr uint32_t kNaFlagRouter = 0x80000000u;
inline constexpr uint32_t kNaFlagSolicited = 0x40000000u;
inline constexpr uint32_t kNaFlagOverride = 0x20000000u;

// Router solicitation (RFC 4861 4.1): 4 bytes of header, 4 reserved, then options.
inline constexpr size_t kNdpRouterSolicitLen = 8;
// Router advertisement (RFC 4861 4.2): header, Cur Hop Limit, M/O flags, Router
// Lifetime (seconds), Reachable Time and Retrans Timer (ms), then options.
inline constexpr size_t kNdpRouterAdvertLen = 16;
inline constexpr size_t kRaRouterLifetimeOff = 6;

// Options (RFC 4861 4.6).
inline constexpr uint8_t kNdpOptSourceLinkAddr = 1;
inline constexpr uint8_t kNdpOptTargetLinkAddr = 2;
inline constexpr uint8_t kNdpOptPrefixInfo = 3;  // 32 bytes (4.6.2)
inline constexpr uint8_t kNdpOptMtu = 5;         // 8 bytes (4.6.4)

// What the options of an NDP message say (the ones we use), after the RFC 4861 checks.
struct NdpOptions {
  std::optional<MacAddr> source_link;
  std::optional<MacAddr> target_link;
  std::optional<uint32_t> mtu;
  uint32_t prefixes = 0;  // prefix information options seen (checked, not used)
};

// Parses the options `opts`: every option's length must be non-zero and fit (RFC 4861
// 4.6); an Ethernet link-layer address option is 8 bytes (RFC 2464 section 8), an MTU
// option 8 and a prefix information option 32 with a prefix length of at most 128.
// Unknown options are skipped (4.6: "silently ignore"). False: malformed.
bool parse_ndp_options(std::span<const uint8_t> opts, NdpOptions& out);

// Writes an 8-byte link-layer address option of `type`.
void emit_ndp_link_option(uint8_t* out, uint8_t type, const MacAddr& mac);

// MLDv2 (RFC 3810 5.2): a report of `groups`, each a CHANGE_TO_EXCLUDE_MODE record with
// no sources (we listen to every source). Sent from a link-local address (or ::, RFC
// 3590), hop limit 1, behind a Hop-by-Hop header with the Router Alert option (RFC 2711,
// value 0: MLD), to ff02::16.
inline constexpr size_t kMldv2ReportHeaderLen = 8;
inline constexpr size_t kMldv2RecordLen = 20;  // type, aux len, sources, group
inline constexpr uint8_t kMldChangeToExclude = 4;
inline constexpr size_t kRouterAlertHopByHopLen = 8;
// Writes the report (checksum zero) to `out`, which has room for the records; its length.
size_t emit_mldv2_report(uint8_t* out, std::span<const Ipv6Addr> groups);
// Writes the 8-byte Hop-by-Hop header carrying the MLD Router Alert, then `next`.
void emit_router_alert_hop_by_hop(uint8_t* out, uint8_t next);

// Stores the ICMPv6 checksum of `msg` (its checksum field zero on entry) between `src`
// and `dst` (RFC 4443 2.3).
void fill_icmpv6_checksum(std::span<uint8_t> msg, const Ipv6Addr& src, const Ipv6Addr& dst);

}  // namespace ws::wire
