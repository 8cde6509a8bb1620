// Neighbour discovery (RFC 4861) and duplicate address detection (RFC 4862) for the
// interfaces that run IPv6.
#include <algorithm>
#include <cstring>

#include "stack/core/checksum.hpp"
#include "stack/iface/interface.hpp"
#include "stack/iface/link_local.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/icmpv6.hpp"
#include "stack/wire/ipv6.hpp"

namespace ws {

namespace {

constexpr uint8_t kNdpHopLimit = 255;  // RFC 4861 7.1: proves the sender is on the link

}  // namespace

Stack::Ipv6Iface::Ipv6Iface(Interface& i, const NeighborConfig& cfg)
    : ifc(i), nd(cfg), mtu(i.cfg.mtu) {
  const Ipv6Addr ll = i.cfg.link_local.value_or(eui64_link_local(i.cfg.mac));
  addrs.push_back(Address{Ipv6Cidr{ll, 64}, Ipv6AddrState::kTentative, 0, Instant{}});
  for (const auto& c : i.cfg.addresses6)
    addrs.push_back(Address{c, Ipv6AddrState::kTentative, 0, Instant{}});
}

Stack::Ipv6Iface::Address* Stack::Ipv6Iface::find(const Ipv6Addr& a) {
  for (auto& x : addrs) {
    if (x.cidr.addr == a) return &x;
  }
  return nullptr;
}

const Stack::Ipv6Iface::Address* Stack::Ipv6Iface::find(const Ipv6Addr& a) const {
  for (const auto& x : addrs) {
    if (x.cidr.addr == a) return &x;
  }
  return nullptr;
}

bool Stack::Ipv6Iface::on_link(const Ipv6Addr& a) const {
  if (a.is_link_local()) return true;
  return std::any_of(addrs.begin() + 1, addrs.end(),
                     [&](const Address& x) { return x.cidr.contains(a); });
}

void Stack::Ipv6Iface::send_solicit(const Ipv6Addr& target, const std::optional<MacAddr>& unicast) {
  ifc.stack.send_solicit(ifc, target, false, unicast);
}

void Stack::Ipv6Iface::send_resolved(TxBuf& frame, const MacAddr& dst) {
  ifc.stack.transmit_resolved(ifc, frame, dst);
}

void Stack::Ipv6Iface::drop_pending(TxBuf& frame) {
  ifc.stack.drops_.add(DropReason::kNdpResolveFailed);
  ifc.stack.neighbor_unreachable(frame);
  ifc.io.release(frame);
}

size_t Stack::ndp_entries() const {
  size_t n = 0;
  for (const auto& i : ifaces_) n += i->v6 ? i->v6->nd.size() : 0;
  return n;
}

std::vector<std::pair<Ipv6Cidr, Stack::Ipv6AddrState>> Stack::ipv6_addresses(uint16_t iface) const {
  std::vector<std::pair<Ipv6Cidr, Ipv6AddrState>> out;
  const Interface& ifc = *ifaces_.at(iface);
  if (ifc.v6) {
    for (const auto& a : ifc.v6->addrs) out.emplace_back(a.cidr, a.state);
  }
  return out;
}

std::optional<Stack::Ipv6AddrState> Stack::ipv6_address_state(uint16_t iface,
                                                              const Ipv6Addr& a) const {
  const Interface& ifc = *ifaces_.at(iface);
  const Ipv6Iface::Address* x = ifc.v6 ? ifc.v6->find(a) : nullptr;
  if (x == nullptr) return std::nullopt;
  return x->state;
}

void Stack::send_solicit(Interface& ifc, const Ipv6Addr& target, bool dad,
                         const std::optional<MacAddr>& unicast) {
  // RFC 4861 4.3 / RFC 4862 5.4.2: DAD from the unspecified address and without the
  // source link-layer option; otherwise from one of our preferred addresses.
  Ipv6Addr src{};
  if (!dad) {
    auto s = source_for6(ifc, target);
    if (!s) return;  // every address still tentative: nothing may be sent yet
    src = *s;
  }
  const Ipv6Addr dst = unicast ? target : target.solicited_node();
  uint8_t msg[wire::kNdpNeighborLen + 8] = {wire::kIcmpv6NeighborSolicit};
  target.to_bytes(msg + 8);
  size_t len = wire::kNdpNeighborLen;
  if (!dad) {
    wire::emit_ndp_link_option(msg + len, wire::kNdpOptSourceLinkAddr, ifc.cfg.mac);
    len += 8;
  }
  std::span<uint8_t> m(msg, len);
  wire::fill_icmpv6_checksum(m, src, dst);
  constexpr uint32_t kHdrs = wire::EthernetView::kHeaderLen + wire::Ipv6View::kHeaderLen;
  TxBuf b;
  if (!ifc.io.alloc_tx(static_cast<uint32_t>(kHdrs + len), b)) {
    drops_.add(DropReason::kNoMbuf);
    return;
  }
  wire::emit_ethernet(b.data, MacAddr{}, ifc.cfg.mac, wire::kEtherTypeIpv6);
  wire::emit_ipv6(b.data + wire::EthernetView::kHeaderLen,
                  wire::Ipv6Repr{src, dst, wire::kIpProtoIcmpv6, kNdpHopLimit, 0, 0,
                                 static_cast<uint16_t>(len)});
  std::memcpy(b.data + kHdrs, msg, len);
  b.len = static_cast<uint32_t>(kHdrs + len);
  ++counters_.ipv6_out;
  ++counters_.ndp_solicits_out;
  transmit_resolved(ifc, b, unicast ? *unicast : dst.multicast_mac());
}

void Stack::send_advert(Interface& ifc, const Ipv6Addr& target, const Ipv6Addr& to, bool solicited,
                        Instant now) {
  // RFC 4861 7.2.4: Override set (we own the address; no anycast), Solicited when
  // answering a unicast sender, and our link-layer address.
  uint8_t msg[wire::kNdpNeighborLen + 8] = {wire::kIcmpv6NeighborAdvert};
  store_be32(msg + 4, wire::kNaFlagOverride | (solicited ? wire::kNaFlagSolicited : 0));
  target.to_bytes(msg + 8);
  wire::emit_ndp_link_option(msg + wire::kNdpNeighborLen, wire::kNdpOptTargetLinkAddr, ifc.cfg.mac);
  wire::fill_icmpv6_checksum(msg, target, to);
  if (send_icmpv6(ifc, target, to, kNdpHopLimit, msg, PacketView(), now)) {
    ++counters_.ndp_adverts_out;
  }
}

void Stack::ndp_input(Interface& ifc, const wire::Ipv6View& ip, std::span<const uint8_t> msg,
                      Instant now) {
  const bool solicit = msg[0] == wire::kIcmpv6NeighborSolicit;
  ++(solicit ? counters_.ndp_solicits_in : counters_.ndp_adverts_in);
  // RFC 4861 7.1.1 and 7.1.2: the checks both messages share.
  if (ip.hop_limit() != kNdpHopLimit) {
    drops_.add(DropReason::kNdpBadHopLimit);
    return;
  }
  if (msg[1] != 0 || msg.size() < wire::kNdpNeighborLen ||
      Ipv6Addr::from_bytes(msg.data() + 8).is_multicast()) {
    drops_.add(DropReason::kNdpMalformed);
    return;
  }
  wire::NdpOptions opts;
  if (!wire::parse_ndp_options(msg.subspan(wire::kNdpNeighborLen), opts)) {
    drops_.add(DropReason::kNdpBadOptions);
    return;
  }
  const Ipv6Addr target = Ipv6Addr::from_bytes(msg.data() + 8);
  if (solicit) {
    ndp_solicit_input(ifc, ip, target, opts, now);
  } else {
    ndp_advert_input(ifc, ip, load_be32(msg.data() + 4), target, opts, now);
  }
}

void Stack::ndp_solicit_input(Interface& ifc, const wire::Ipv6View& ip, const Ipv6Addr& target,
                              const wire::NdpOptions& opts, Instant now) {
  const bool dad = ip.src().is_unspecified();
  if (dad && (!ip.dst().is_solicited_node() || opts.source_link)) {
    drops_.add(DropReason::kNdpMalformed);
    return;
  }
  Ipv6Iface::Address* a = ifc.v6->find(target);
  if (a == nullptr || a->state == Ipv6AddrState::kDuplicate) {
    drops_.add(DropReason::kNdpNotForUs);
    return;
  }
  if (a->state == Ipv6AddrState::kTentative) {
    // RFC 4862 5.4.3: another node's DAD for the same address: it is a duplicate.
    // A solicitation from a node that already uses it says nothing to DAD.
    if (dad) address_duplicate(ifc, target);
    return;
  }
  if (dad) {
    // RFC 4861 7.2.4: a DAD probe for an address we own is answered to all nodes.
    send_advert(ifc, target, Ipv6Addr::all_nodes(), false, now);
    return;
  }
  if (opts.source_link) ifc.v6->nd.solicited_by(ip.src(), *opts.source_link, now, *ifc.v6);
  send_advert(ifc, target, ip.src(), true, now);
}

void Stack::ndp_advert_input(Interface& ifc, const wire::Ipv6View& ip, uint32_t flags,
                             const Ipv6Addr& target, const wire::NdpOptions& opts, Instant now) {
  const bool solicited = (flags & wire::kNaFlagSolicited) != 0;
  if (solicited && ip.dst().is_multicast()) {  // RFC 4861 7.1.2
    drops_.add(DropReason::kNdpMalformed);
    return;
  }
  if (Ipv6Iface::Address* a = ifc.v6->find(target)) {
    // RFC 4862 5.4.4: an advertisement for a tentative address ends its DAD; one for an
    // address in use is another node's claim, which we do not follow.
    if (a->state == Ipv6AddrState::kTentative) {
      address_duplicate(ifc, target);
    } else {
      drops_.add(DropReason::kNdpNotForUs);
    }
    return;
  }
  if (!ifc.v6->nd.advertised(target, opts.target_link, solicited,
                             (flags & wire::kNaFlagOverride) != 0, now, *ifc.v6)) {
    drops_.add(DropReason::kNdpNotForUs);
  }
}

void Stack::address_duplicate(Interface& ifc, const Ipv6Addr& addr) {
  Ipv6Iface::Address* a = ifc.v6->find(addr);
  if (a == nullptr || a->state == Ipv6AddrState::kDuplicate) return;
  a->state = Ipv6AddrState::kDuplicate;
  paths6_.clear();  // a kept path may have this source
  ++counters_.ndp_dad_duplicates;
  if (cfg_.on_duplicate_address) cfg_.on_duplicate_address(ifc.index, addr);
}

void Stack::start_ipv6(Interface& ifc, Instant now) {
  for (auto& a : ifc.v6->addrs) {
    a.dad_sent = 0;
    a.dad_at = now;
    a.state = ifc.cfg.dad_transmits == 0 ? Ipv6AddrState::kPreferred : Ipv6AddrState::kTentative;
  }
  ifc.v6->rs_sent = 0;
  ifc.v6->rs_at = now;
  ifc.v6->ra_heard = false;
  paths6_.clear();  // every address is tentative again
  start_mld(ifc, now);
  v6_deadline_ = Instant::from_ns(0);
}

Instant Stack::poll_ipv6(Instant now) {
  if (now < v6_deadline_) return v6_deadline_;
  Instant next = Instant::never();
  const Duration retrans = cfg_.ndp.retrans_timer;
  for (auto& ifc : ifaces_) {
    if (!ifc->v6) continue;
    for (auto& a : ifc->v6->addrs) {
      if (a.state != Ipv6AddrState::kTentative) continue;
      if (now >= a.dad_at) {
        // RFC 4862 5.4.2: DupAddrDetectTransmits solicitations RetransTimer apart; no
        // answer RetransTimer after the last one and the address is ours.
        if (a.dad_sent < ifc->cfg.dad_transmits) {
          send_solicit(*ifc, a.cidr.addr, true, std::nullopt);
          ++a.dad_sent;
          a.dad_at = now + retrans;
        } else {
          a.state = Ipv6AddrState::kPreferred;
          paths6_.clear();  // a better source for some destinations
          continue;
        }
      }
      next = earliest(next, a.dad_at);
    }
    next = earliest(next, ifc->v6->nd.poll(now, *ifc->v6));
    next = earliest(next, poll_routers(*ifc, now));
    next = earliest(next, poll_mld(*ifc, now));
  }
  reasm6_.poll(now, drops_, [this, now](std::span<uint8_t> first) {
    if (cfg_.icmp_reassembly_time_exceeded) reassembly_expired6(first, now);
  });
  next = earliest(next, reasm6_.next_deadline());
  counters_.ndp_entries = ndp_entries();
  counters_.ndp_default_routers = 0;
  for (const auto& i : ifaces_) counters_.ndp_default_routers += i->v6 ? i->v6->routers.size() : 0;
  v6_deadline_ = next;
  return next;
}

}  // namespace ws
