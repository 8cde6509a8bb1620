// IPv6 frames from a peer (and from a router) to a stack under test, for the unit tests
// that drive IPv6 through a StackHarness: addresses, Ethernet + IPv6 framing, and the
// ICMPv6 neighbour discovery and echo messages with their checksums.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "stack/core/addr.hpp"
#include "stack/core/bytes.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/icmpv6.hpp"
#include "stack/wire/ipv6.hpp"
#include "tests/support/stack_harness.hpp"

namespace ws::test {

inline const Ipv6Addr kOur6 = *Ipv6Addr::parse("2001:db8::1");
inline const Ipv6Addr kOurLl = *Ipv6Addr::parse("fe80::1");
inline const Ipv6Addr kPeer6 = *Ipv6Addr::parse("2001:db8::2");
inline const Ipv6Addr kPeerLl = *Ipv6Addr::parse("fe80::2");
inline constexpr size_t kEth = 14;

inline InterfaceConfig v6_interface(uint32_t dad = 1) {
  InterfaceConfig c = default_interface();
  c.addresses6 = {Ipv6Cidr{kOur6, 64}};
  c.link_local = kOurLl;
  c.dad_transmits = dad;
  return c;
}

struct V6 {
  Ipv6Addr src = kPeer6;
  Ipv6Addr dst = kOur6;
  uint8_t hop_limit = 64;
  MacAddr eth_dst = kOurMac;
};

// An Ethernet frame peer -> us carrying `payload` after the fixed IPv6 header.
inline std::vector<uint8_t> v6_frame(const V6& s, uint8_t next_header,
                                     const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> f(kEth + wire::Ipv6View::kHeaderLen + payload.size());
  wire::emit_ethernet(f.data(), s.eth_dst, kPeerMac, wire::kEtherTypeIpv6);
  wire::emit_ipv6(f.data() + kEth, wire::Ipv6Repr{s.src, s.dst, next_header, s.hop_limit, 0, 0,
                                                  static_cast<uint16_t>(payload.size())});
  std::copy(payload.begin(), payload.end(), f.begin() + kEth + wire::Ipv6View::kHeaderLen);
  return f;
}

// An ICMPv6 message with its checksum filled for s.src -> s.dst.
inline std::vector<uint8_t> icmp6(const V6& s, std::vector<uint8_t> msg) {
  wire::fill_icmpv6_checksum(msg, s.src, s.dst);
  return v6_frame(s, wire::kIpProtoIcmpv6, msg);
}

inline std::vector<uint8_t> ns_msg(const Ipv6Addr& target, std::optional<MacAddr> sll) {
  std::vector<uint8_t> m(24, 0);
  m[0] = wire::kIcmpv6NeighborSolicit;
  target.to_bytes(m.data() + 8);
  if (sll) {
    m.resize(32);
    wire::emit_ndp_link_option(m.data() + 24, wire::kNdpOptSourceLinkAddr, *sll);
  }
  return m;
}

inline std::vector<uint8_t> na_msg(const Ipv6Addr& target, uint32_t flags,
                                   std::optional<MacAddr> tll) {
  std::vector<uint8_t> m(24, 0);
  m[0] = wire::kIcmpv6NeighborAdvert;
  store_be32(m.data() + 4, flags);
  target.to_bytes(m.data() + 8);
  if (tll) {
    m.resize(32);
    wire::emit_ndp_link_option(m.data() + 24, wire::kNdpOptTargetLinkAddr, *tll);
  }
  return m;
}

inline std::vector<uint8_t> echo_msg(uint16_t id, uint16_t seq, size_t n) {
  std::vector<uint8_t> m(8 + n);
  m[0] = wire::kIcmpv6EchoRequest;
  store_be16(m.data() + 4, id);
  store_be16(m.data() + 6, seq);
  for (size_t i = 0; i < n; ++i) m[8 + i] = static_cast<uint8_t>(i * 7 + 1);
  return m;
}

inline V6 ndp(Ipv6Addr src, Ipv6Addr dst, MacAddr eth_dst) { return V6{src, dst, 255, eth_dst}; }

inline const Ipv6Addr kRouterLl = *Ipv6Addr::parse("fe80::fe");
inline const MacAddr kRouterMac{{0x02, 0, 0, 0, 0, 0xfe}};
inline const Ipv6Addr kFar6 = *Ipv6Addr::parse("2001:db8:77::9");

inline std::vector<uint8_t> ra_msg(uint16_t lifetime, std::optional<MacAddr> sll,
                                   std::optional<uint32_t> mtu = std::nullopt) {
  std::vector<uint8_t> m(wire::kNdpRouterAdvertLen, 0);
  m[0] = wire::kIcmpv6RouterAdvert;
  m[4] = 64;
  store_be16(m.data() + 6, lifetime);
  if (sll) {
    m.resize(m.size() + 8);
    wire::emit_ndp_link_option(m.data() + m.size() - 8, wire::kNdpOptSourceLinkAddr, *sll);
  }
  if (mtu) {
    const size_t o = m.size();
    m.resize(o + 8);
    m[o] = wire::kNdpOptMtu;
    m[o + 1] = 1;
    store_be32(m.data() + o + 4, *mtu);
  }
  return m;
}

inline V6 from_router(uint8_t hop_limit = 255) {
  return V6{kRouterLl, Ipv6Addr::all_nodes(), hop_limit, Ipv6Addr::all_nodes().multicast_mac()};
}

}  // namespace ws::test
