// ICMPv6 (RFC 4443): echo, the errors we send, and the frame path of IPv6 output
// (next hop, neighbour resolution).
#include "stack/wire/icmpv6.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "stack/core/checksum.hpp"
#include "stack/iface/interface.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/ipv6.hpp"

namespace ws {

void Stack::icmpv6_input(Interface& ifc, const wire::Ipv6View& ip, const PacketView& msg,
                         bool to_tentative, Instant now) {
  ++counters_.icmpv6_in;
  uint8_t hdr_buf[wire::kNdpNeighborLen];
  auto icmp = wire::Icmpv6View::parse(msg.pullup(std::min(msg.size(), wire::kNdpNeighborLen),
                                                 hdr_buf, counters_.rx_header_pullups));
  if (!icmp) {
    drops_.add(DropReason::kIcmpv6Truncated);
    return;
  }
  // RFC 4443 2.3: the checksum covers the pseudo header and the whole message.
  const uint32_t pseudo =
      ipv6_pseudo_sum(ip.src(), ip.dst(), wire::kIpProtoIcmpv6, static_cast<uint32_t>(msg.size()));
  if (csum_fold(msg.csum(pseudo)) != 0) {
    drops_.add(DropReason::kIcmpv6BadChecksum);
    return;
  }
  const uint8_t type = icmp->type();
  if (type == wire::kIcmpv6NeighborSolicit || type == wire::kIcmpv6NeighborAdvert) {
    ndp_input(ifc, ip, linearize(msg), now);  // small: one span, copied only when chained
    return;
  }
  if (to_tentative) {  // RFC 4862 5.4: a tentative address takes nothing but DAD
    drops_.add(DropReason::kIpv6NotForUs);
    return;
  }
  switch (type) {
    case wire::kIcmpv6EchoRequest: {
      // RFC 4443 4.1: answered from the address it was sent to; requests to a multicast
      // group are not answered (a smurf amplifier otherwise).
      if (ip.dst().is_multicast() || msg.size() < wire::Icmpv6View::kEchoHeaderLen) {
        drops_.add(msg.size() < wire::Icmpv6View::kEchoHeaderLen
                       ? DropReason::kIcmpv6Truncated
                       : DropReason::kIcmpv6UnsupportedType);
        return;
      }
      // The reply differs in type and code only, and swapping source and destination
      // leaves the pseudo-header sum alone: its checksum follows by RFC 1624.
      uint8_t head[4] = {wire::kIcmpv6EchoReply, 0, 0, 0};
      const uint16_t old_word = static_cast<uint16_t>((type << 8) | icmp->code());
      store_be16(head + 2, csum_update16(icmp->checksum(), old_word,
                                         static_cast<uint16_t>(wire::kIcmpv6EchoReply << 8)));
      if (send_icmpv6(ifc, ip.dst(), ip.src(), cfg_.default_ttl, head, msg.tail(4), now)) {
        ++counters_.icmpv6_echo_replies_out;
      }
      return;
    }
    case wire::kIcmpv6EchoReply:
      return;  // we send no echo requests of our own
    case wire::kIcmpv6RouterAdvert:
      ra_input(ifc, ip, linearize(msg), now);
      return;
    case wire::kIcmpv6MldQuery:
      mld_query_input(ifc, ip, now);
      return;
    case wire::kIcmpv6DestUnreachable:
    case wire::kIcmpv6PacketTooBig:
    case wire::kIcmpv6TimeExceeded:
    case wire::kIcmpv6ParamProblem: {
      ++counters_.icmpv6_errors_in;
      if (!icmpv6_error_to_flow(msg, type, icmp->code(), now)) {
        drops_.add(DropReason::kIcmpv6ErrorUnmatched);
      }
      return;
    }
    default:
      drops_.add(DropReason::kIcmpv6UnsupportedType);
      return;
  }
}

bool Stack::send_icmpv6(Interface& ifc, const Ipv6Addr& src, const Ipv6Addr& dst, uint8_t hop_limit,
                        std::span<const uint8_t> head, const PacketView& body, Instant now) {
  const auto len = static_cast<uint32_t>(head.size() + body.size());
  wire::Ipv6Repr r{src, dst, wire::kIpProtoIcmpv6, hop_limit, 0, 0, static_cast<uint16_t>(len)};
  return send_ipv6(ifc, r, head, body, now);
}

bool Stack::send_ipv6(Interface& ifc, const wire::Ipv6Repr& r, std::span<const uint8_t> head,
                      const PacketView& body, Instant now) {
  constexpr uint32_t kHdrs = wire::EthernetView::kHeaderLen + wire::Ipv6View::kHeaderLen;
  const uint32_t len = r.payload_len;
  const Ipv6Addr& dst = r.dst;
  if (wire::Ipv6View::kHeaderLen + len > ifc.v6->mtu) {
    return send_icmpv6_fragments(ifc, r, head, body, now);
  }
  TxBuf b;
  if (!ifc.io.alloc_tx(std::max<uint32_t>(60, kHdrs + len), b)) {
    drops_.add(DropReason::kNoMbuf);
    return false;
  }
  wire::emit_ethernet(b.data, MacAddr{}, ifc.cfg.mac, wire::kEtherTypeIpv6);
  wire::emit_ipv6(b.data + wire::EthernetView::kHeaderLen, r);
  std::memcpy(b.data + kHdrs, head.data(), head.size());
  body.copy_out(0, std::span<uint8_t>(b.data + kHdrs + head.size(), body.size()));
  b.len = kHdrs + len;
  pad_to_min_frame(b);
  ++counters_.ipv6_out;
  send_routed6(ifc, b, dst, now);
  return true;
}

bool Stack::send_icmpv6_fragments(Interface& ifc, const wire::Ipv6Repr& r,
                                  std::span<const uint8_t> head, const PacketView& body,
                                  Instant now) {
  constexpr uint32_t kHdrs = wire::EthernetView::kHeaderLen + wire::Ipv6View::kHeaderLen +
                             static_cast<uint32_t>(wire::kIpv6FragmentHeaderLen);
  // Every fragment but the last carries a multiple of 8 bytes (RFC 8200 4.5).
  const uint32_t per = (ifc.v6->mtu - wire::Ipv6View::kHeaderLen -
                        static_cast<uint32_t>(wire::kIpv6FragmentHeaderLen)) &
                       ~7u;
  const auto total = static_cast<uint32_t>(head.size() + body.size());
  const uint32_t id = next_frag_id6_++;
  for (uint32_t off = 0; off < total; off += per) {
    const uint32_t n = std::min(per, total - off);
    TxBuf b;
    if (!ifc.io.alloc_tx(std::max<uint32_t>(60, kHdrs + n), b)) {
      drops_.add(DropReason::kNoMbuf);
      return false;
    }
    wire::emit_ethernet(b.data, MacAddr{}, ifc.cfg.mac, wire::kEtherTypeIpv6);
    wire::Ipv6Repr fr = r;
    fr.next_header = wire::kIpv6Fragment;
    fr.payload_len = static_cast<uint16_t>(wire::kIpv6FragmentHeaderLen + n);
    wire::emit_ipv6(b.data + wire::EthernetView::kHeaderLen, fr);
    uint8_t* fh = b.data + wire::EthernetView::kHeaderLen + wire::Ipv6View::kHeaderLen;
    fh[0] = r.next_header;
    fh[1] = 0;
    store_be16(fh + 2, static_cast<uint16_t>(off | (off + n < total ? 1 : 0)));
    store_be32(fh + 4, id);
    // The fragment's bytes of head + body.
    uint8_t* out = b.data + kHdrs;
    const uint32_t from_head =
        off < head.size() ? std::min<uint32_t>(n, static_cast<uint32_t>(head.size()) - off) : 0;
    std::memcpy(out, head.data() + std::min<size_t>(off, head.size()), from_head);
    const size_t body_off = off + from_head - head.size();
    body.copy_out(body_off, std::span<uint8_t>(out + from_head, n - from_head));
    b.len = std::max<uint32_t>(60, kHdrs + n);
    std::fill(b.data + kHdrs + n, b.data + b.len, uint8_t{0});
    ++counters_.ipv6_out;
    send_routed6(ifc, b, r.dst, now);
  }
  return true;
}

void Stack::send_icmpv6_error(Interface& ifc, uint8_t type, uint8_t code, uint32_t word,
                              const PacketView& offending, Instant now) {
  // RFC 4443 2.4: never about an error message, a packet to a multicast group (but
  // Packet Too Big and the unknown-option Parameter Problem), or from a source that
  // names no single node.
  uint8_t quote_buf[wire::Ipv6View::kHeaderLen];
  auto ip =
      wire::Ipv6View::parse(offending.pullup(std::min(offending.size(), wire::Ipv6View::kHeaderLen),
                                             quote_buf, counters_.rx_header_pullups));
  if (!ip || ip->src().is_unspecified() || ip->src().is_multicast()) return;
  const bool mcast_ok =
      type == wire::kIcmpv6PacketTooBig || (type == wire::kIcmpv6ParamProblem && code == 2);
  if (ip->dst().is_multicast() && !mcast_ok) return;
  if (ip->next_header() == wire::kIpProtoIcmpv6) {
    uint8_t t = 0;
    if (offending.copy_out(wire::Ipv6View::kHeaderLen, std::span(&t, 1)) &&
        wire::is_icmpv6_error(t)) {
      return;
    }
  }
  auto src = ip->dst().is_multicast() ? source_for6(ifc, ip->src()) : ip->dst();
  if (!src) return;
  if (!icmp6_errors_.take(now)) {
    drops_.add(DropReason::kIcmpv6RateLimited);
    return;
  }
  // RFC 4443 2.4 (c): as much of the packet as fits in the minimum MTU of 1280.
  const size_t room = 1280 - wire::Ipv6View::kHeaderLen - 8;
  const PacketView quote = offending.first(room);
  uint8_t head[8] = {type, code, 0, 0};
  store_be32(head + 4, word);
  const uint32_t len = static_cast<uint32_t>(sizeof head + quote.size());
  uint32_t sum = ipv6_pseudo_sum(*src, ip->src(), wire::kIpProtoIcmpv6, len);
  store_be16(head + 2, csum_fold(quote.csum(csum_partial(head, sum))));
  if (send_icmpv6(ifc, *src, ip->src(), cfg_.default_ttl, head, quote, now)) {
    ++counters_.icmpv6_errors_out;
    if (type == wire::kIcmpv6DestUnreachable) ++counters_.icmpv6_unreachable_out;
    if (type == wire::kIcmpv6TimeExceeded) ++counters_.icmpv6_time_exceeded_out;
    if (type == wire::kIcmpv6ParamProblem) ++counters_.icmpv6_param_problem_out;
  }
}

bool Stack::icmpv6_error_to_flow(const PacketView& msg, uint8_t type, uint8_t code, Instant now) {
  // RFC 4443 2.4 (c), (e): the invoking packet follows the 8-byte header, and the error
  // goes to its upper layer. Errors about one of our TCP segments go to TCP, which checks
  // them against the connection (RFC 5927); Packet Too Big carries the link's MTU (RFC 8201
  // 4). ICMPv6 and UDP keep no per-flow state to act on, so nothing else matches a flow.
  const std::span<const uint8_t> m = linearize(msg);
  if (tcp_ == nullptr || m.size() < 8 + wire::Ipv6View::kHeaderLen + 8) return false;
  const auto quoted = m.subspan(8);
  if (quoted[wire::Ipv6View::kNextHeaderOff] != wire::kIpProtoTcp) return false;
  const uint32_t mtu = load_be32(m.data() + 4);
  return tcp_->icmp_error(type, code, static_cast<uint16_t>(std::min<uint32_t>(mtu, 65535)), quoted,
                          now);
}

void Stack::neighbor_unreachable(TxBuf& frame) {
  // RFC 4861 7.2.2: each packet that waited is reported as destination unreachable,
  // address unreachable. Only our own packets wait here and nothing goes on the link; the
  // report is counted, and TCP learns of the failure from its own retransmission timer
  // (an unreachable is a soft error for an established connection, RFC 1122 4.2.3.9).
  static_cast<void>(frame);
  ++counters_.icmpv6_address_unreachable;
}

void Stack::reassembly_expired6(std::span<uint8_t> first, Instant now) {
  // RFC 8200 4.5: time exceeded, fragment reassembly time exceeded, to the source of the
  // first fragment, from the interface its destination (one of our addresses) is on.
  const auto ip = wire::Ipv6View::parse(first);
  if (!ip) return;
  for (auto& ifc : ifaces_) {
    if (!ifc->v6 || ifc->v6->find(ip->dst()) == nullptr) continue;
    send_icmpv6_error(*ifc, wire::kIcmpv6TimeExceeded, wire::kIcmpv6CodeReassemblyTimeout, 0,
                      PacketView(first), now);
    return;
  }
}

std::optional<Ipv6Addr> Stack::source_for6(const Interface& ifc, const Ipv6Addr& dst) const {
  if (!ifc.v6) return std::nullopt;
  const auto& addrs = ifc.v6->addrs;
  auto usable = [](const Ipv6Iface::Address& a) { return a.state == Ipv6AddrState::kPreferred; };
  // Link-local destinations (and multicast on the link) from the link-local address;
  // others from a global address, the one whose prefix holds the destination first.
  const bool link_scope = dst.is_link_local() || (dst.is_multicast() && (dst.b[1] & 0x0f) <= 2);
  if (link_scope) {
    if (usable(addrs[0])) return addrs[0].cidr.addr;
  }
  const Ipv6Iface::Address* any = nullptr;
  for (size_t i = 1; i < addrs.size(); ++i) {
    if (!usable(addrs[i])) continue;
    if (addrs[i].cidr.contains(dst)) return addrs[i].cidr.addr;
    if (any == nullptr) any = &addrs[i];
  }
  if (any != nullptr) return any->cidr.addr;
  if (usable(addrs[0])) return addrs[0].cidr.addr;
  return std::nullopt;
}

std::optional<Stack::ResolvedHop6> Stack::send_routed6(Interface& ifc, TxBuf& b,
                                                       const Ipv6Addr& dst, Instant now) {
  ifc.io.seal(b);  // the frame may wait for resolution: out of any staging area first
  if (dst.is_multicast()) {
    transmit_resolved(ifc, b, dst.multicast_mac());  // RFC 2464 section 7
    return std::nullopt;
  }
  // RFC 4861 5.2: on-link destinations directly, the rest through the default router.
  Ipv6Addr hop = dst;
  if (!ifc.v6->on_link(dst)) {
    auto router = ipv6_router(ifc.index, now);
    if (!router) {
      drops_.add(DropReason::kIpv6NoRoute);
      ifc.io.release(b);
      return std::nullopt;
    }
    hop = *router;
  }
  if (auto mac = ifc.v6->nd.resolve(hop, now)) {
    // Sending may have moved a STALE entry to DELAY, whose timer runs out sooner.
    v6_deadline_ = std::min(v6_deadline_, now + cfg_.ndp.delay_first_probe);
    transmit_resolved(ifc, b, *mac);
    return ResolvedHop6{hop, *mac};
  }
  if (ifc.v6->nd.enqueue(hop, b, now, *ifc.v6) == NeighborCache::Queued::kQueueFull) {
    drops_.add(DropReason::kNdpQueueFull);
    ifc.io.release(b);
  }
  v6_deadline_ = Instant::from_ns(0);  // a solicitation went out: re-evaluate timers
  return std::nullopt;
}

}  // namespace ws
