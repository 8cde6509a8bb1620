// IPv6 output for the transports (RFC 8200): the interface towards a destination,
// frames laid out behind a 40-byte header, the L4 checksum over the IPv6 pseudo
// header, and next-hop resolution through the neighbour cache (send_routed6), or all of
// that kept for a destination (tx_path_cache.hpp).
#include <algorithm>

#include "stack/iface/interface.hpp"
#include "stack/iface/ipv6_iface.hpp"
#include "stack/iface/l4_checksum.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/ipv6.hpp"

namespace ws {

namespace {
constexpr uint32_t kL2 = wire::EthernetView::kHeaderLen;
constexpr uint32_t kL3 = wire::Ipv6View::kHeaderLen;
}  // namespace

Stack::Interface* Stack::route6(const Ipv6Addr& dst) const {
  // RFC 4861 5.2: a destination on one of our prefixes first, then the first interface
  // with a default router, configured or learned. A link-local destination names no
  // interface by itself (RFC 4007 6): the first one running IPv6 is taken.
  Interface* fallback = nullptr;
  for (const auto& ifc : ifaces_) {
    if (!ifc->v6) continue;
    if (!dst.is_link_local() && ifc->v6->on_link(dst)) return ifc.get();
    const bool router = ifc->cfg.gateway6 || ifc->v6->routers.size() != 0;
    if (fallback == nullptr && (dst.is_link_local() || router)) fallback = ifc.get();
  }
  return fallback;
}

bool Stack::begin_frame6(const IpAddr& src, const Ipv6Addr& dst, uint8_t proto, int32_t header_len,
                         uint32_t l4_len, L4Frame& out) {
  const Ipv6Addr want = src.is_any() ? Ipv6Addr{} : src.v6();
  Interface* ifc = nullptr;
  std::optional<Ipv6Addr> from;
  if (const TxPath6* p = paths6_.find(dst, proto, want)) {
    ifc = ifaces_[p->iface].get();
    from = p->src;
  } else {
    ifc = dst.is_multicast() ? nullptr : route6(dst);
    if (ifc == nullptr) {
      drops_.add(DropReason::kIpv6NoRoute);
      return false;
    }
    from = src.is_any() ? source_for6(*ifc, dst) : std::optional<Ipv6Addr>(want);
    if (!from) {  // every address still tentative: nothing may be sent from one (RFC 4862 5.4)
      drops_.add(DropReason::kIpv6NoRoute);
      return false;
    }
  }
  if (!alloc_l4_frame(*ifc, kL3, header_len, l4_len, out)) return false;
  out.src = *from;
  out.dst = dst;
  out.proto = proto;
  // TxBuf's checksum flags describe IPv4 packets: the L4 checksum of an IPv6 one is
  // computed here, summing the payload while it is copied in.
  out.sum_payload = header_len >= 0;
  return true;
}

// The headers come from the path's template: what emit_ipv6, the checksum's pseudo header
// and the neighbour lookup would have written, as long as the path holds
// (tx_path_cache.hpp).
bool Stack::commit_on_path6(Interface& ifc, L4Frame& f, Instant now) {
  const TxPath6* p = paths6_.find(f.dst.v6(), f.proto, f.src.v6());
  if (p == nullptr || p->iface != ifc.index || p->nd_version != ifc.v6->nd.version() ||
      now >= p->quiet_until) {
    return false;
  }
  TxBuf& b = f.buf;
  const uint32_t pseudo = p->hdr.write(b.data, static_cast<uint16_t>(f.l4_size()));
  detail::fill_l4(ifc.offloads, f, false, false, pseudo);
  transmit_on_path(ifc, b, kL3, counters_.ipv6_out);
  return true;
}

void Stack::commit6(L4Frame& f, Instant now) {
  Interface& ifc = *ifaces_[f.iface];
  if (commit_on_path6(ifc, f, now)) return;
  TxBuf& b = f.buf;
  const wire::Ipv6Repr r{
      f.src.v6(), f.dst.v6(), f.proto, cfg_.default_ttl, 0, 0, static_cast<uint16_t>(f.l4_size())};
  wire::emit_ipv6(b.data + kL2, r);
  fill_l4_checksum(ifc, f, false, false);
  b.l2_len = kL2;
  b.l3_len = kL3;
  pad_to_min_frame(b);
  wire::emit_ethernet(b.data, MacAddr{}, ifc.cfg.mac, wire::kEtherTypeIpv6);
  ++counters_.ipv6_out;
  if (auto hop = send_routed6(ifc, b, r.dst, now)) keep_path6(ifc, f, *hop, now);
}

void Stack::keep_path6(const Interface& ifc, const L4Frame& f, const ResolvedHop6& hop,
                       Instant now) {
  // Only frames from the address the interface picks itself: a path found for "any source"
  // must be one.
  const Ipv6Addr src = f.src.v6();
  const Ipv6Addr dst = f.dst.v6();
  const auto own = source_for6(ifc, dst);
  if (!own || !(*own == src)) return;
  TxPath6& p = paths6_.place(dst, f.proto);
  p.dst = dst;
  p.src = src;
  p.proto = f.proto;
  p.iface = ifc.index;
  p.nd_version = ifc.v6->nd.version();
  // Nothing that timers move (router lifetimes, DAD, neighbour states) changes before the
  // next IPv6 timer, nor the entry before its own deadline.
  p.quiet_until = std::min(ifc.v6->nd.quiet_until(hop.ip, now), v6_deadline_);
  p.hdr.build(hop.mac, ifc.cfg.mac, src, dst, f.proto, cfg_.default_ttl);
}

bool Stack::send_datagram6(const IpAddr& src, const Ipv6Addr& dst, uint8_t proto,
                           std::span<const uint8_t> head, std::span<const uint8_t> body,
                           Instant now) {
  Interface* ifc = dst.is_multicast() ? nullptr : route6(dst);
  const auto from =
      ifc == nullptr ? std::nullopt
                     : (src.is_any() ? source_for6(*ifc, dst) : std::optional<Ipv6Addr>(src.v6()));
  if (!from) {
    drops_.add(DropReason::kIpv6NoRoute);
    return false;
  }
  if (head.size() + body.size() > 65535) {
    drops_.add(DropReason::kFrameTooLong);
    return false;
  }
  const wire::Ipv6Repr r{
      *from, dst, proto, cfg_.default_ttl, 0, 0, static_cast<uint16_t>(head.size() + body.size())};
  return send_ipv6(*ifc, r, head, PacketView(body), now);
}

}  // namespace ws
