// IPv6 (RFC 8200): the fixed 40-byte header, and the walk over the extension headers
// that may follow it. The view guarantees the fixed header only; the input path checks
// version and payload length step by step so that each failure has its own drop reason
// (iface/ipv6_input.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "stack/core/addr.hpp"
#include "stack/core/bytes.hpp"
#include "stack/core/drops.hpp"
#include "stack/core/packet_view.hpp"

namespace ws::wire {

// Next Header values (IANA "Assigned Internet Protocol Numbers").
inline constexpr uint8_t kIpv6HopByHop = 0;
inline constexpr uint8_t kIpv6Routing = 43;
inline constexpr uint8_t kIpv6Fragment = 44;
inline constexpr uint8_t kIpv6NoNext = 59;
inline constexpr uint8_t kIpv6DestOptions = 60;
inline constexpr uint8_t kIpProtoIcmpv6 = 58;

class Ipv6View {
 public:
  static constexpr size_t kHeaderLen = 40;
  static constexpr size_t kPayloadLenOff = 4;
  static constexpr size_t kNextHeaderOff = 6;
  static constexpr size_t kHopLimitOff = 7;
  static constexpr size_t kSrcOff = 8;
  static constexpr size_t kDstOff = 24;

  static std::optional<Ipv6View> parse(std::span<const uint8_t> b) {
    if (b.size() < kHeaderLen) return std::nullopt;
    return Ipv6View(b);
  }
  uint8_t version() const { return b_[0] >> 4; }
  uint8_t traffic_class() const { return static_cast<uint8_t>((load_be16(b_.data()) >> 4) & 0xff); }
  uint32_t flow_label() const { return load_be32(b_.data()) & 0xfffff; }
  uint16_t payload_len() const { return load_be16(b_.data() + kPayloadLenOff); }
  uint8_t next_header() const { return b_[kNextHeaderOff]; }
  uint8_t hop_limit() const { return b_[kHopLimitOff]; }
  Ipv6Addr src() const { return Ipv6Addr::from_bytes(b_.data() + kSrcOff); }
  Ipv6Addr dst() const { return Ipv6Addr::from_bytes(b_.data() + kDstOff); }
  std::span<const uint8_t> bytes() const { return b_; }

 private:
  explicit Ipv6View(std::span<const uint8_t> b) : b_(b) {}
  std::span<const uint8_t> b_;
};

struct Ipv6Repr {
  Ipv6Addr src;
  Ipv6Addr dst;
  uint8_t next_header = 0;
  uint8_t hop_limit = 64;
  uint8_t traffic_class = 0;
  uint32_t flow_label = 0;
  uint16_t payload_len = 0;
};

// Writes the 40-byte fixed header.
void emit_ipv6(uint8_t* out, const Ipv6Repr& r);

// The Fragment header (RFC 8200 4.5).
struct Ipv6FragmentInfo {
  uint32_t offset = 0;  // bytes
  bool more = false;
  uint32_t ident = 0;
  uint8_t next_header = 0;  // of the fragmentable part
  uint32_t header_off = 0;  // of the Fragment header, from the start of the payload
  uint32_t named_at = 0;    // the Next Header field that names it, from the IPv6 header
  bool is_atomic() const { return offset == 0 && !more; }  // RFC 6946
};
inline constexpr size_t kIpv6FragmentHeaderLen = 8;

// Where the extension headers of a packet end: what follows them, and what they said.
struct Ipv6Chain {
  uint8_t upper = kIpv6NoNext;  // the upper-layer protocol (or 44 when stopped at a fragment)
  uint32_t upper_off = 0;       // its offset from the start of the payload
  uint32_t upper_field = 0;     // where its Next Header value is, from the IPv6 header
  std::optional<Ipv6FragmentInfo> fragment;  // set when a non-atomic Fragment header ends the walk
  // For an ICMPv6 Parameter Problem (RFC 4443 3.4): the code and the offset of the
  // offending byte from the start of the IPv6 header, when the walk asks for one.
  bool send_param_problem = false;
  uint8_t param_code = 0;
  uint32_t param_pointer = 0;
};

// Bounds on what we walk (RFC 8200 4.1 sets none; these keep a hostile chain from
// costing more than a handful of headers, RFC 7045 section 2.2).
inline constexpr size_t kIpv6MaxExtHeaders = 8;
inline constexpr size_t kIpv6MaxChainBytes = 512;

// Walks the extension headers of `payload` (the bytes after the fixed header; its first
// header is `first`): hop-by-hop (first only, RFC 8200 4.1), destination options,
// routing (RFC 5095: type 0 refused when it would be acted on) and fragment. An atomic
// fragment's header is stepped over (RFC 6946); any other fragment ends the walk with
// `fragment` set, for reassembly. `dst_multicast` chooses the option action for 11xxxxxx
// (RFC 8200 4.2). Returns the reason the packet is dropped, or nothing when it continues.
std::optional<DropReason> walk_ipv6_chain(const PacketView& payload, uint8_t first,
                                          bool dst_multicast, Ipv6Chain& out);

// RFC 7112 section 5: whether a first fragment's fragmentable part `frag` (after the
// Fragment header, whose Next Header is `next`) holds the rest of the header chain and the
// whole upper-layer header (ICMPv6 type, code and checksum; the UDP header; the TCP header
// without options). False when a header runs past the fragment.
bool first_fragment_complete(const PacketView& frag, uint8_t next);

}  // namespace ws::wire
