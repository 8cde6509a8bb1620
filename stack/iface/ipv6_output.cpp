// IPv6 output for the transports (RFC 8200): the interface towards a destination,
// frames laid out behind a 40-byte header, the L4 checksum over the IPv6 pseudo
// header, and next-hop resolution through the neighbour cache (send_routed6).
#include <algorithm>

#include "stack/iface/interface.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/ipv6.hpp"

namespace ws {

namespace {
constexpr uint32_t kL2 = wire::EthernetView::kHeaderLen;
constexpr uint32_t kL3 = wire::Ipv6View::kHeaderLen;
}  // namespace

Stack::Interface* Stack::route6(const Ipv6Addr& dst) const {
  // RFC 4861 5.2: a destination on one of our prefixes first, then the first interface
  // with a default router. A link-local destination names no interface by itself
  // (RFC 4007 6): the first one running IPv6 is taken.
  Interface* fallback = nullptr;
  for (const auto& ifc : ifaces_) {
    if (!ifc->v6) continue;
    if (!dst.is_link_local() && ifc->v6->on_link(dst)) return ifc.get();
    if (fallback == nullptr && (dst.is_link_local() || ifc->cfg.gateway6)) fallback = ifc.get();
  }
  return fallback;
}

bool Stack::begin_frame6(const IpAddr& src, const Ipv6Addr& dst, uint8_t proto, int32_t header_len,
                         uint32_t l4_len, L4Frame& out) {
  Interface* ifc = dst.is_multicast() ? nullptr : route6(dst);
  if (ifc == nullptr) {
    drops_.add(DropReason::kIpv6NoRoute);
    return false;
  }
  const auto from = src.is_any() ? source_for6(*ifc, dst) : std::optional<Ipv6Addr>(src.v6());
  if (!from) {  // every address still tentative: nothing may be sent from one (RFC 4862 5.4)
    drops_.add(DropReason::kIpv6NoRoute);
    return false;
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

void Stack::commit6(L4Frame& f, Instant now) {
  Interface& ifc = *ifaces_[f.iface];
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
  send_routed6(ifc, b, r.dst, now);
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
