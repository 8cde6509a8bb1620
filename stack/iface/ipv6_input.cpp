// IPv6 input (RFC 8200), validated step by step; every failed step is counted under
// its reason. ICMPv6, UDP and TCP are carried above it.
#include <algorithm>

#include "stack/iface/interface.hpp"
#include "stack/wire/icmpv6.hpp"
#include "stack/wire/ipv6.hpp"

namespace ws {

bool Stack::ipv6_wants(const Interface& ifc, const MacAddr& dst) const {
  if (!ifc.v6 || dst.b[0] != 0x33 || dst.b[1] != 0x33) return false;
  if (dst == Ipv6Addr::all_nodes().multicast_mac()) return true;
  for (const auto& a : ifc.v6->addrs) {
    if (dst == a.cidr.addr.solicited_node().multicast_mac()) return true;
  }
  return false;
}

void Stack::ipv6_input(Interface& ifc, const PacketView& frame_pkt, Instant now) {
  if (!ifc.v6) {
    drops_.add(DropReason::kEthUnknownType);  // IPv6 is not configured on this port
    return;
  }
  uint8_t hdr_buf[wire::Ipv6View::kHeaderLen];
  auto ip =
      wire::Ipv6View::parse(frame_pkt.pullup(std::min(frame_pkt.size(), wire::Ipv6View::kHeaderLen),
                                             hdr_buf, counters_.rx_header_pullups));
  if (!ip) {
    drops_.add(DropReason::kIpv6Truncated);
    return;
  }
  if (ip->version() != 6) {
    drops_.add(DropReason::kIpv6BadVersion);
    return;
  }
  // A payload length of zero announces a jumbogram (RFC 2675), which we do not take.
  const size_t total = wire::Ipv6View::kHeaderLen + ip->payload_len();
  if (ip->payload_len() == 0 || total > frame_pkt.size()) {
    drops_.add(DropReason::kIpv6BadPayloadLength);
    return;
  }
  const PacketView pkt = frame_pkt.first(total);  // without Ethernet padding
  const Ipv6Addr src = ip->src();
  const Ipv6Addr dst = ip->dst();
  if (src.is_multicast() || src.is_loopback() || src.is_v4_mapped()) {
    drops_.add(DropReason::kIpv6BadSource);
    return;
  }
  bool to_tentative = false;
  if (dst.is_multicast()) {
    // All-nodes, or the solicited-node group of one of our addresses (any state:
    // DAD listens on the tentative one's group, RFC 4862 5.4.2).
    const bool ours = dst == Ipv6Addr::all_nodes() ||
                      (dst.is_solicited_node() &&
                       std::any_of(ifc.v6->addrs.begin(), ifc.v6->addrs.end(), [&](const auto& a) {
                         return a.cidr.addr.solicited_node() == dst;
                       }));
    if (!ours) {
      drops_.add(DropReason::kIpv6NotForUs);
      return;
    }
  } else {
    const Ipv6Iface::Address* a = ifc.v6->find(dst);
    if (a == nullptr || a->state == Ipv6AddrState::kDuplicate) {
      drops_.add(DropReason::kIpv6NotForUs);
      return;
    }
    to_tentative = a->state == Ipv6AddrState::kTentative;
  }
  ++counters_.ipv6_in;
  ipv6_deliver(ifc, pkt, *ip, to_tentative, false, now);
}

void Stack::ipv6_deliver(Interface& ifc, const PacketView& pkt, const wire::Ipv6View& ip,
                         bool to_tentative, bool reassembled, Instant now) {
  const PacketView payload = pkt.tail(wire::Ipv6View::kHeaderLen);
  // Most packets carry TCP or UDP right behind the fixed header: no chain to walk.
  const uint8_t next = ip.next_header();
  if ((next == wire::kIpProtoTcp || next == wire::kIpProtoUdp) && !to_tentative &&
      l4_input6(ifc, pkt, ip, next, payload, now)) {
    return;
  }
  wire::Ipv6Chain chain;
  if (auto r = wire::walk_ipv6_chain(payload, ip.next_header(), ip.dst().is_multicast(), chain)) {
    drops_.add(*r);
    if (chain.send_param_problem && !to_tentative) {
      send_icmpv6_error(ifc, wire::kIcmpv6ParamProblem, chain.param_code, chain.param_pointer, pkt,
                        now);
    }
    return;
  }
  if (chain.fragment) {
    const wire::Ipv6FragmentInfo& f = *chain.fragment;
    // RFC 8200 4.5: a fragment other than the last must carry a multiple of 8 bytes.
    const size_t frag_len = payload.size() - chain.upper_off;
    if (f.more && (frag_len == 0 || frag_len % 8 != 0)) {
      drops_.add(DropReason::kIpv6FragmentBadLength);
      send_icmpv6_error(ifc, wire::kIcmpv6ParamProblem, 0, wire::Ipv6View::kPayloadLenOff, pkt,
                        now);
      return;
    }
    // RFC 7112: the first fragment carries the whole header chain, up to and including
    // the upper-layer header.
    if (f.offset == 0 && f.more &&
        !wire::first_fragment_complete(payload.tail(chain.upper_off), f.next_header)) {
      drops_.add(DropReason::kIpv6FragmentIncompleteChain);
      return;
    }
    if (reassembled || to_tentative) {
      drops_.add(DropReason::kIpv6Fragment);
      return;
    }
    auto whole = reasm6_.input(pkt, f, now, drops_);
    if (!whole) return;
    v6_deadline_ = Instant::from_ns(0);  // the reassembly deadline may have moved
    const PacketView w(*whole);
    ipv6_deliver(ifc, w, *wire::Ipv6View::parse(*whole), false, true, now);
    return;
  }
  if (chain.upper == wire::kIpProtoIcmpv6) {
    icmpv6_input(ifc, ip, payload.tail(chain.upper_off), to_tentative, now);
    return;
  }
  if (to_tentative) {
    drops_.add(DropReason::kIpv6NotForUs);
    return;
  }
  if (l4_input6(ifc, pkt, ip, chain.upper, payload.tail(chain.upper_off), now)) return;
  drops_.add(DropReason::kIpv6UnknownNextHeader);
  if (chain.upper != wire::kIpv6NoNext) {
    // RFC 8200 4: an unrecognised Next Header: Parameter Problem code 1 at that field.
    send_icmpv6_error(ifc, wire::kIcmpv6ParamProblem, 1, chain.upper_field, pkt, now);
  }
}

bool Stack::l4_input6(Interface& ifc, const PacketView& pkt, const wire::Ipv6View& ip,
                      uint8_t proto, const PacketView& l4, Instant now) {
  if (proto != wire::kIpProtoUdp && (proto != wire::kIpProtoTcp || tcp_ == nullptr)) return false;
  // A source in ::/64 names no peer and would read as IPv4 above (IpAddr).
  if (IpAddr::reserved_v6(ip.src())) {
    drops_.add(DropReason::kIpv6BadSource);
    return true;
  }
  const IpAddr src(ip.src());
  const IpAddr dst(ip.dst());
  if (proto == wire::kIpProtoUdp) {
    // RFC 4443 3.1: port unreachable, never for a packet sent to a group.
    if (!udp_receive(l4, src, dst, RxMeta::Cksum::kUnknown, now) && !ip.dst().is_multicast()) {
      send_icmpv6_error(ifc, wire::kIcmpv6DestUnreachable, wire::kIcmpv6CodePortUnreachable, 0, pkt,
                        now);
    }
    return true;
  }
  if (ip.dst().is_multicast()) {  // TCP is unicast only (RFC 9293 3.9.1)
    drops_.add(DropReason::kIpv6NotForUs);
    return true;
  }
  ++counters_.tcp_in;
  tcp_->input(src, dst, l4, false, now);
  return true;
}

}  // namespace ws
