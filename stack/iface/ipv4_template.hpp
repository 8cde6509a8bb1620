// The Ethernet and IPv4 headers of frames to one destination, laid out once: each frame
// then costs a 34-byte copy, its total length and identification, and the checksum terms
// those two add (RFC 1071 section 2: the sum of the fixed words is kept). Used for a burst
// of UDP datagrams (ipv4_burst.cpp) and for the destinations in Stack's path cache
// (tx_path_cache.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "stack/core/addr.hpp"
#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/ipv4.hpp"

namespace ws {

struct Ipv4Template {
  static constexpr uint32_t kL2 = wire::EthernetView::kHeaderLen;
  static constexpr uint32_t kL3 = wire::Ipv4View::kMinHeaderLen;

  std::array<uint8_t, kL2 + kL3> hdr{};  // total length, identification, checksum zero
  uint32_t ip_sum = 0;                   // the sum of the IPv4 header as laid out
  uint32_t pseudo = 0;                   // the L4 pseudo header without its length

  void build(const MacAddr& dst_mac, const MacAddr& src_mac, Ipv4Addr src, Ipv4Addr dst,
             uint8_t proto, uint8_t ttl, bool dont_fragment) {
    wire::emit_ethernet(hdr.data(), dst_mac, src_mac, wire::kEtherTypeIpv4);
    wire::Ipv4Repr ip;
    ip.src = src;
    ip.dst = dst;
    ip.protocol = proto;
    ip.ttl = ttl;
    ip.dont_fragment = dont_fragment;
    wire::emit_ipv4(hdr.data() + kL2, ip, true);
    store_be16(hdr.data() + kL2 + wire::Ipv4View::kTotalLenOff, 0);
    ip_sum = csum_20(hdr.data() + kL2);
    pseudo = ipv4_pseudo_sum(src, dst, proto, 0);
  }

  // Writes both headers at the front of `frame` for an L4 packet of `l4_len` bytes with
  // identification `id`, the IPv4 checksum too unless the port computes it. Returns the
  // L4 pseudo header's sum.
  uint32_t write(uint8_t* frame, uint16_t l4_len, uint16_t id, bool ip_offload) const {
    std::memcpy(frame, hdr.data(), hdr.size());
    uint8_t* iph = frame + kL2;
    const auto total = static_cast<uint16_t>(kL3 + l4_len);
    store_be16(iph + wire::Ipv4View::kTotalLenOff, total);
    store_be16(iph + wire::Ipv4View::kIdOff, id);
    if (!ip_offload) store_be16(iph + wire::Ipv4View::kChecksumOff, csum_fold(ip_sum + total + id));
    return pseudo + l4_len;
  }
};

}  // namespace ws
