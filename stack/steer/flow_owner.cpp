#include "stack/steer/flow_owner.hpp"

#include <algorithm>

#include "stack/core/bytes.hpp"
#include "stack/wire/arp.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/icmp.hpp"
#include "stack/wire/icmpv6.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/ipv6.hpp"

namespace ws {

namespace {

// The 64-bit finaliser of MurmurHash3: every input bit affects every output bit, so the
// low bits taken by `% cores` are as good as the high ones.
uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

constexpr size_t kIcmpHeaderLen = 8;

}  // namespace

uint32_t flow_hash(IpAddr a, uint16_t a_port, IpAddr b, uint16_t b_port) {
  auto key = [](IpAddr x) { return x.is_v4() ? uint64_t{x.v4().v} : mix64(x.hi ^ mix64(x.lo)); };
  // Order the endpoints so that both directions hash alike.
  uint64_t ea = (key(a) << 16) | a_port;
  uint64_t eb = (key(b) << 16) | b_port;
  if (ea > eb) std::swap(ea, eb);
  return static_cast<uint32_t>(mix64(mix64(ea) ^ (eb * 0x9e3779b97f4a7c15ull)));
}

FlowOwner::FlowOwner(uint32_t cores, std::vector<uint16_t> host_ports)
    : cores_(cores == 0 ? 1 : cores), host_ports_(std::move(host_ports)) {
  std::sort(host_ports_.begin(), host_ports_.end());
}

bool FlowOwner::host_port(uint16_t p) const {
  return std::binary_search(host_ports_.begin(), host_ports_.end(), p);
}

void FlowOwner::pin(Ipv4Cidr range, uint32_t core) { pins_.push_back({range, core % cores_}); }

uint32_t FlowOwner::pinned(IpAddr a, IpAddr b) const {
  if (!a.is_v4() || !b.is_v4()) return kNone;
  for (const Pin& p : pins_) {
    if (p.range.contains(a.v4()) || p.range.contains(b.v4())) return p.core;
  }
  return kNone;
}

uint32_t FlowOwner::of_tcp(IpAddr a, uint16_t a_port, IpAddr b, uint16_t b_port) const {
  if (const uint32_t p = pinned(a, b); p != kNone) return p;
  if (host_port(a_port) || host_port(b_port)) return of_hosts(a, b);
  return flow_hash(a, a_port, b, b_port) % cores_;
}

uint32_t FlowOwner::of_hosts(IpAddr a, IpAddr b) const {
  if (const uint32_t p = pinned(a, b); p != kNone) return p;
  return flow_hash(a, 0, b, 0) % cores_;
}

// `quoted`: the IPv4 header quoted in an ICMP error (RFC 792: the header and the first 8
// bytes of the datagram), which belongs to the flow the error is about.
uint32_t FlowOwner::of_ip(std::span<const uint8_t> b, uint32_t here, bool quoted) const {
  auto ip = wire::Ipv4View::parse(b);
  if (!ip || ip->version() != 4 || ip->header_len() < wire::Ipv4View::kMinHeaderLen ||
      ip->header_len() > b.size())
    return here;
  std::span<const uint8_t> l4 = b.subspan(ip->header_len());
  const uint8_t proto = ip->protocol();
  if (proto == wire::kIpProtoTcp && !ip->is_fragment() && l4.size() >= 4) {
    return of_tcp(ip->src(), load_be16(l4.data()), ip->dst(), load_be16(l4.data() + 2));
  }
  if (proto == wire::kIpProtoIcmp && !quoted && !ip->is_fragment() && l4.size() >= kIcmpHeaderLen) {
    const uint8_t type = l4[0];
    if (type == wire::kIcmpDestUnreachable || type == wire::kIcmpTimeExceeded)
      return of_ip(l4.subspan(kIcmpHeaderLen), here, true);
    return here;  // echo and the rest: no connection state
  }
  if (proto == wire::kIpProtoTcp || proto == wire::kIpProtoUdp)
    return of_hosts(ip->src(), ip->dst());
  if (const uint32_t p = pinned(ip->src(), ip->dst()); p != kNone) return p;  // ESP, ICMP
  return here;
}

// An IPv6 packet: TCP by its 4-tuple and UDP by its hosts when the upper layer follows
// the fixed header; a fragment by its hosts (RFC 8200 4.5: only the first carries the
// ports); an ICMPv6 error by the packet it quotes (RFC 4443 2.4 (c)). Other extension
// headers in front of TCP or UDP are rare enough to go by the hosts too.
uint32_t FlowOwner::of_ipv6(std::span<const uint8_t> b, uint32_t here, bool quoted) const {
  auto ip = wire::Ipv6View::parse(b);
  if (!ip || ip->version() != 6) return here;
  std::span<const uint8_t> l4 = b.subspan(wire::Ipv6View::kHeaderLen);
  const IpAddr src(ip->src());
  const IpAddr dst(ip->dst());
  const uint8_t nh = ip->next_header();
  if (nh == wire::kIpProtoTcp && l4.size() >= 4)
    return of_tcp(src, load_be16(l4.data()), dst, load_be16(l4.data() + 2));
  if (nh == wire::kIpProtoIcmpv6 && !quoted && l4.size() >= kIcmpHeaderLen &&
      wire::is_icmpv6_error(l4[0]))
    return of_ipv6(l4.subspan(kIcmpHeaderLen), here, true);
  if (nh == wire::kIpProtoIcmpv6) return here;  // echo, NDP: no connection state
  if (ip->dst().is_multicast()) return here;
  return of_hosts(src, dst);
}

uint32_t FlowOwner::of_frame(std::span<const uint8_t> frame, uint32_t here) const {
  if (cores_ == 1) return 0;
  auto eth = wire::EthernetView::parse(frame);
  if (!eth) return here;
  std::span<const uint8_t> body = eth->payload();
  if (eth->ethertype() == wire::kEtherTypeIpv4) return of_ip(body, here, false);
  // An ARP reply answers one core's request, but the next hop it names serves them all.
  if (eth->ethertype() == wire::kEtherTypeArp && body.size() >= wire::ArpView::kOpOff + 2 &&
      load_be16(body.data() + wire::ArpView::kOpOff) == static_cast<uint16_t>(wire::ArpOp::kReply))
    return kEvery;
  // Likewise a neighbour advertisement (RFC 4861), and another node's duplicate address
  // probe (a solicitation from ::, RFC 4862 5.4.3): every core keeps its own neighbour
  // cache and runs its own DAD.
  if (eth->ethertype() == wire::kEtherTypeIpv6 && body.size() >= 41 &&
      body[wire::Ipv6View::kNextHeaderOff] == wire::kIpProtoIcmpv6) {
    const uint8_t type = body[wire::Ipv6View::kHeaderLen];
    const bool from_unspecified =
        Ipv6Addr::from_bytes(body.data() + wire::Ipv6View::kSrcOff).is_unspecified();
    if (type == wire::kIcmpv6NeighborAdvert ||
        (type == wire::kIcmpv6NeighborSolicit && from_unspecified))
      return kEvery;
  }
  if (eth->ethertype() == wire::kEtherTypeIpv6) return of_ipv6(body, here, false);
  return here;
}

}  // namespace ws
