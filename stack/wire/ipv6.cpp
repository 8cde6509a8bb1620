#include "stack/wire/ipv6.hpp"

#include "stack/wire/ipv4.hpp"

namespace ws::wire {

void emit_ipv6(uint8_t* out, const Ipv6Repr& r) {
  store_be32(out,
             (uint32_t{6} << 28) | (uint32_t{r.traffic_class} << 20) | (r.flow_label & 0xfffff));
  store_be16(out + Ipv6View::kPayloadLenOff, r.payload_len);
  out[Ipv6View::kNextHeaderOff] = r.next_header;
  out[Ipv6View::kHopLimitOff] = r.hop_limit;
  r.src.to_bytes(out + Ipv6View::kSrcOff);
  r.dst.to_bytes(out + Ipv6View::kDstOff);
}

namespace {

// ICMPv6 Parameter Problem codes (RFC 4443 3.4).
constexpr uint8_t kParamErroneousField = 0;
constexpr uint8_t kParamUnknownNextHeader = 1;
constexpr uint8_t kParamUnknownOption = 2;

// Parameter Problem pointers count from the start of the IPv6 header (RFC 4443 3.4);
// the walk counts from the start of the payload.
constexpr uint32_t kFixed = Ipv6View::kHeaderLen;

DropReason param_problem(Ipv6Chain& out, uint8_t code, uint32_t pointer, DropReason r) {
  out.send_param_problem = true;
  out.param_code = code;
  out.param_pointer = pointer;
  return r;
}

// The options of a hop-by-hop or destination options header (`opts`, its bytes after
// the two-byte preamble; `base` their offset in the payload). RFC 8200 4.2: an unknown
// option's two high type bits say skip (00), discard (01), discard and report (10), or
// discard and report unless the destination is multicast (11).
std::optional<DropReason> check_options(std::span<const uint8_t> opts, uint32_t base,
                                        bool dst_multicast, Ipv6Chain& out) {
  constexpr uint8_t kPad1 = 0;
  constexpr uint8_t kPadN = 1;
  size_t i = 0;
  while (i < opts.size()) {
    const uint8_t type = opts[i];
    if (type == kPad1) {
      ++i;
      continue;
    }
    if (i + 2 > opts.size() || i + 2 + opts[i + 1] > opts.size()) {
      return param_problem(out, kParamErroneousField, kFixed + base + static_cast<uint32_t>(i),
                           DropReason::kIpv6ExtTruncated);
    }
    if (type != kPadN) {
      switch (type >> 6) {
        case 0:
          break;
        case 1:
          return DropReason::kIpv6UnknownOption;
        case 3:
          if (dst_multicast) return DropReason::kIpv6UnknownOption;
          [[fallthrough]];
        default:
          return param_problem(out, kParamUnknownOption, kFixed + base + static_cast<uint32_t>(i),
                               DropReason::kIpv6UnknownOption);
      }
    }
    i += 2 + opts[i + 1];
  }
  return std::nullopt;
}

}  // namespace

std::optional<DropReason> walk_ipv6_chain(const PacketView& payload, uint8_t first,
                                          bool dst_multicast, Ipv6Chain& out) {
  uint8_t nh = first;
  uint32_t off = 0;
  uint32_t nh_field = Ipv6View::kNextHeaderOff;  // where the current Next Header was read
  uint8_t buf[2048];                             // one extension header: at most 8 + 255 * 8 bytes
  for (size_t n = 0;; ++n) {
    const bool ext =
        nh == kIpv6HopByHop || nh == kIpv6DestOptions || nh == kIpv6Routing || nh == kIpv6Fragment;
    if (!ext) {
      out.upper = nh;
      out.upper_off = off;
      out.upper_field = nh_field;
      return std::nullopt;
    }
    if (n == kIpv6MaxExtHeaders || off >= kIpv6MaxChainBytes) {
      return DropReason::kIpv6ExtChainTooLong;
    }
    // RFC 8200 4.1: hop-by-hop only immediately after the fixed header.
    if (nh == kIpv6HopByHop && n != 0) {
      return param_problem(out, kParamUnknownNextHeader, nh_field, DropReason::kIpv6ExtBadOrder);
    }
    uint8_t pre[2];
    if (!payload.copy_out(off, pre)) return DropReason::kIpv6ExtTruncated;
    const size_t len = nh == kIpv6Fragment ? kIpv6FragmentHeaderLen : (size_t{pre[1]} + 1) * 8;
    std::span<uint8_t> h(buf, len);
    if (!payload.copy_out(off, h)) return DropReason::kIpv6ExtTruncated;
    if (nh == kIpv6Fragment) {
      const uint16_t fo = load_be16(h.data() + 2);
      Ipv6FragmentInfo f{static_cast<uint32_t>(fo & 0xfff8),
                         (fo & 1) != 0,
                         load_be32(h.data() + 4),
                         h[0],
                         off,
                         nh_field};
      if (!f.is_atomic()) {
        out.upper = kIpv6Fragment;
        out.upper_off = off + kIpv6FragmentHeaderLen;
        out.fragment = f;
        return std::nullopt;
      }
    } else if (nh == kIpv6Routing) {
      // RFC 8200 4.4 for a routing type we do not implement (every type; RFC 5095 3
      // makes type 0 one of them): ignored when no segments are left, else refused.
      const uint8_t type = h[2];
      const uint8_t segments_left = h[3];
      if (segments_left != 0) {
        return param_problem(
            out, kParamErroneousField, kFixed + off + 2,
            type == 0 ? DropReason::kIpv6RoutingType0 : DropReason::kIpv6RoutingHeader);
      }
    } else if (auto r = check_options(h.subspan(2), off + 2, dst_multicast, out)) {
      return r;
    }
    nh_field = kFixed + off;
    nh = h[0];
    off += static_cast<uint32_t>(len);
  }
}

bool first_fragment_complete(const PacketView& frag, uint8_t next) {
  Ipv6Chain rest;
  const auto r = walk_ipv6_chain(frag, next, false, rest);
  if (r) return r != DropReason::kIpv6ExtTruncated;  // other faults are found after reassembly
  const size_t need = rest.upper == kIpProtoIcmpv6 ? 4
                      : rest.upper == 17           ? 8
                      : rest.upper == 6            ? 20
                                                   : 0;
  return frag.size() - rest.upper_off >= need;
}

}  // namespace ws::wire
