// The Ethernet and IPv6 headers of frames to one destination, laid out once: each frame
// then costs a 54-byte copy and its payload length. The L4 pseudo header's sum (RFC 8200
// 8.1) is kept without the length, which each frame adds.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "stack/core/addr.hpp"
#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/ipv6.hpp"

namespace ws {

struct Ipv6Template {
  static constexpr uint32_t kL2 = wire::EthernetView::kHeaderLen;
  static constexpr uint32_t kL3 = wire::Ipv6View::kHeaderLen;

  std::array<uint8_t, kL2 + kL3> hdr{};  // payload length zero
  uint32_t pseudo = 0;                   // the L4 pseudo header without its length

  void build(const MacAddr& dst_mac, const MacAddr& src_mac, const Ipv6Addr& src,
             const Ipv6Addr& dst, uint8_t next_header, uint8_t hop_limit) {
    wire::emit_ethernet(hdr.data(), dst_mac, src_mac, wire::kEtherTypeIpv6);
    wire::emit_ipv6(hdr.data() + kL2, wire::Ipv6Repr{src, dst, next_header, hop_limit, 0, 0, 0});
    pseudo = ipv6_pseudo_sum(src, dst, next_header, 0);
  }

  // Writes both headers at the front of `frame` for an L4 packet of `l4_len` bytes. Returns
  // the L4 pseudo header's sum.
  uint32_t write(uint8_t* frame, uint16_t l4_len) const {
    std::memcpy(frame, hdr.data(), hdr.size());
    store_be16(frame + kL2 + wire::Ipv6View::kPayloadLenOff, l4_len);
    return pseudo + l4_len;
  }
};

}  // namespace ws
