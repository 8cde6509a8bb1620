// Router discovery for a host (RFC 4861 section 6): router advertisements checked and,
// with accept_ra, learned (the default router with its lifetime, the link MTU, the
// router's link address); router solicitations at start. Prefixes are checked but not
// used: addresses are not autoconfigured (RFC 4862 5.5 is not implemented).
#include <algorithm>

#include "stack/iface/interface.hpp"
#include "stack/wire/icmpv6.hpp"
#include "stack/wire/ipv6.hpp"

namespace ws {

namespace {

constexpr uint32_t kMinIpv6Mtu = 1280;  // RFC 8200 5
constexpr uint8_t kNdpHopLimit = 255;   // RFC 4861 6.1.2: sent by a router on the link

}  // namespace

void Stack::ra_input(Interface& ifc, const wire::Ipv6View& ip, std::span<const uint8_t> msg,
                     Instant now) {
  ++counters_.ndp_ra_in;
  // RFC 4861 6.1.2, in its order (the checksum was checked by icmpv6_input).
  // RFC 4291 2.5.6: a link-local address is fe80::/64 (the other 54 bits zero).
  const Ipv6Addr& src = ip.src();
  if (!src.is_link_local() || src.b[1] != 0x80 ||
      std::any_of(src.b.begin() + 2, src.b.begin() + 8, [](uint8_t x) { return x != 0; })) {
    drops_.add(DropReason::kNdpRaBadSource);
    return;
  }
  if (ip.hop_limit() != kNdpHopLimit) {
    drops_.add(DropReason::kNdpBadHopLimit);
    return;
  }
  if (msg[1] != 0 || msg.size() < wire::kNdpRouterAdvertLen) {
    drops_.add(DropReason::kNdpMalformed);
    return;
  }
  wire::NdpOptions opts;
  if (!wire::parse_ndp_options(msg.subspan(wire::kNdpRouterAdvertLen), opts)) {
    drops_.add(DropReason::kNdpBadOptions);
    return;
  }
  if (!ifc.cfg.accept_ra) {
    drops_.add(DropReason::kNdpRaNotAccepted);
    return;
  }
  ra_learn(ifc, ip.src(), msg, opts, now);
}

void Stack::ra_learn(Interface& ifc, const Ipv6Addr& router, std::span<const uint8_t> msg,
                     const wire::NdpOptions& opts, Instant now) {
  Ipv6Iface& v6 = *ifc.v6;
  // RFC 4861 6.3.4: the Router Lifetime (seconds) adds, refreshes or withdraws the router.
  const auto lifetime = Duration::seconds(load_be16(msg.data() + wire::kRaRouterLifetimeOff));
  const auto change = v6.routers.advertised(router, lifetime, now);
  if (change == DefaultRouters::Change::kAdded || change == DefaultRouters::Change::kWithdrawn) {
    paths6_.clear();  // off-link destinations may take another router
  }
  if (lifetime != Duration::zero()) v6.ra_heard = true;  // 6.3.7: stop soliciting
  // The router's link address: a STALE neighbour entry, as a solicitation's (7.2.3).
  if (opts.source_link) v6.nd.solicited_by(router, *opts.source_link, now, v6);
  // 6.3.4: the MTU option, when at least the IPv6 minimum; never above the port's MTU.
  if (opts.mtu && *opts.mtu >= kMinIpv6Mtu) v6.mtu = std::min(*opts.mtu, ifc.cfg.mtu);
  v6_deadline_ = Instant::from_ns(0);  // the earliest router expiry may have moved
}

Instant Stack::poll_routers(Interface& ifc, Instant now) {
  Ipv6Iface& v6 = *ifc.v6;
  const size_t routers = v6.routers.size();
  Instant next = v6.routers.poll(now);
  if (v6.routers.size() != routers) paths6_.clear();  // a router's lifetime ran out
  if (!ifc.cfg.accept_ra || v6.ra_heard || v6.rs_sent >= cfg_.ndp.max_rtr_solicitations) {
    return next;
  }
  // RFC 4861 6.3.7: up to MAX_RTR_SOLICITATIONS, RTR_SOLICITATION_INTERVAL apart, once the
  // link-local address may be used (from it, with our link address). DAD's timer wakes
  // the poll until then.
  if (v6.addrs[0].state != Ipv6AddrState::kPreferred) return next;
  if (now >= v6.rs_at) {
    send_router_solicit(ifc, now);
    ++v6.rs_sent;
    v6.rs_at = now + cfg_.ndp.rtr_solicitation_interval;
  }
  return v6.rs_sent < cfg_.ndp.max_rtr_solicitations ? earliest(next, v6.rs_at) : next;
}

void Stack::send_router_solicit(Interface& ifc, Instant now) {
  const Ipv6Addr src = ifc.v6->addrs[0].cidr.addr;
  const Ipv6Addr dst = Ipv6Addr::all_routers();
  uint8_t msg[wire::kNdpRouterSolicitLen + 8] = {wire::kIcmpv6RouterSolicit};
  wire::emit_ndp_link_option(msg + wire::kNdpRouterSolicitLen, wire::kNdpOptSourceLinkAddr,
                             ifc.cfg.mac);
  wire::fill_icmpv6_checksum(msg, src, dst);
  if (send_icmpv6(ifc, src, dst, kNdpHopLimit, msg, PacketView(), now)) ++counters_.ndp_rs_out;
}

std::optional<Ipv6Addr> Stack::ipv6_router(uint16_t iface, Instant now) const {
  const Interface& ifc = *ifaces_.at(iface);
  if (ifc.cfg.gateway6) return ifc.cfg.gateway6;
  return ipv6_learned_router(iface, now);
}

std::optional<Ipv6Addr> Stack::ipv6_learned_router(uint16_t iface, Instant now) const {
  const Interface& ifc = *ifaces_.at(iface);
  if (!ifc.v6) return std::nullopt;
  // RFC 4861 6.3.6: a router whose neighbour entry is not known to fail comes first.
  return ifc.v6->routers.select(now, [&](const Ipv6Addr& r) {
    auto st = ifc.v6->nd.state_of(r);
    return !st || *st != NeighborCache::State::kIncomplete;
  });
}

uint32_t Stack::ipv6_mtu(uint16_t iface) const {
  const Interface& ifc = *ifaces_.at(iface);
  return ifc.v6 ? ifc.v6->mtu : ifc.cfg.mtu;
}

}  // namespace ws
