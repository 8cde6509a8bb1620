// IPv4 output: route, frame allocation, header and checksum emission, next-hop
// resolution (RFC 1122 section 3.3.1).
#include <algorithm>

#include "stack/core/checksum.hpp"
#include "stack/iface/interface.hpp"
#include "stack/iface/l4_checksum.hpp"
#include "stack/ipsec/esp_layer.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/udp.hpp"

namespace ws {

namespace {
constexpr uint32_t kL2 = wire::EthernetView::kHeaderLen;
constexpr uint32_t kL3 = wire::Ipv4View::kMinHeaderLen;

}  // namespace

// Inline into begin() and begin_gather(), its only callers: every frame sent starts here.
[[gnu::always_inline]] inline bool Stack::begin_frame(IpAddr src_addr, IpAddr dst_addr,
                                                      uint8_t proto, int32_t header_len,
                                                      uint32_t l4_len, L4Frame& out) {
  out.esp = nullptr;
  if (!dst_addr.is_v4())
    return begin_frame6(src_addr, dst_addr.v6(), proto, header_len, l4_len, out);
  const Ipv4Addr src = src_addr.v4();
  const Ipv4Addr dst = dst_addr.v4();
  if (esp_ != nullptr) {
    if (ipsec::OutboundSa* sa = esp_->may_protect(dst, proto)) {
      return begin_esp_frame(*sa, src, dst, proto, l4_len, out);
    }
  }
  std::optional<Route> r;
  if (const TxPath* p = paths_.find(dst, proto, src)) {
    r = Route{p->iface, p->next_hop, false};
  } else {
    r = route(dst);
    if (!r) {
      drops_.add(DropReason::kIpv4NoRoute);
      return false;
    }
  }
  Interface& ifc = *ifaces_[r->iface];
  if (!alloc_l4_frame(ifc, kL3, header_len, l4_len, out)) return false;
  out.src = src.is_any() ? ifc.cfg.address.addr : src;
  out.dst = dst;
  out.proto = proto;
  out.next_hop = r->next_hop;
  out.broadcast = r->broadcast;
  // The payload is summed on its way in only where commit() computes the L4
  // checksum in software.
  const TxOffloads& o = ifc.offloads;
  bool l4_offload =
      (proto == wire::kIpProtoTcp && o.tcp_cksum) || (proto == wire::kIpProtoUdp && o.udp_cksum);
  out.sum_payload = header_len >= 0 && !l4_offload;
  return true;
}

bool Stack::begin(IpAddr src, IpAddr dst, uint8_t proto, uint32_t l4_len, L4Frame& out) {
  return begin_frame(src, dst, proto, -1, l4_len, out);
}

bool Stack::begin_gather(IpAddr src, IpAddr dst, uint8_t proto, uint32_t header_len,
                         uint32_t l4_len, L4Frame& out) {
  if (header_len > l4_len || header_len > 60) {
    drops_.add(DropReason::kFrameTooLong);
    return false;
  }
  return begin_frame(src, dst, proto, static_cast<int32_t>(header_len), l4_len, out);
}

void Stack::lay_out_l4(L4Frame& out, uint32_t l4_len, uint32_t l4_off) {
  const TxBuf& b = out.buf;
  // A gathered frame's first segment may end inside the L4 payload; the rest
  // of the payload lies in b.segs.
  uint32_t first = b.nsegs == 0 ? l4_len : std::min(l4_len, b.capacity - l4_off);
  out.l4 = {b.data + l4_off, first};
  out.more = b.more();
  out.more_len = l4_len - first;
  out.payload_summed = false;
}

TsoLimits Stack::tso_limits_to(IpAddr dst_addr) const {
  // IPv6 segments are cut by TCP: TxBuf flags describe IPv4 offloads only.
  if (!dst_addr.is_v4()) return {};
  const Ipv4Addr dst = dst_addr.v4();
  // The port cannot cut an ESP packet: protected traffic is segmented by TCP.
  if (esp_ != nullptr && esp_->may_protect(dst, wire::kIpProtoTcp) != nullptr) return {};
  auto r = route(dst);
  if (!r || r->broadcast) return {};
  const TxOffloads& o = ifaces_[r->iface]->offloads;
  // The port recomputes both checksums of every segment it cuts, so TSO goes
  // with IPv4 and TCP checksum offload.
  if (!o.tcp_tso || !o.tcp_cksum || !o.ipv4_cksum) return {};
  return {std::min<uint32_t>(o.tso_max, 65535), o.tso_segment_frame_max};
}

bool Stack::begin_tso(IpAddr src, IpAddr dst, uint32_t header_len, uint32_t l4_len,
                      uint32_t segment_payload, L4Frame& out) {
  uint32_t max = tso_limits_to(dst).packet;
  if (max == 0 || kL3 + l4_len > max || segment_payload == 0 || segment_payload > 0xffff ||
      header_len > l4_len) {
    drops_.add(DropReason::kFrameTooLong);
    return false;
  }
  auto r = route(dst.v4());
  Interface& ifc = *ifaces_[r->iface];
  if (!ifc.io.alloc_tx_gather(kL2 + kL3 + l4_len, kL2 + kL3 + header_len, out.buf)) {
    drops_.add(DropReason::kNoMbuf);
    return false;
  }
  out.buf.len = kL2 + kL3 + l4_len;
  out.buf.flags = kTxTcpSeg;
  out.buf.l4_len = static_cast<uint16_t>(header_len);
  out.buf.tso_segsz = static_cast<uint16_t>(segment_payload);
  lay_out_l4(out, l4_len);
  out.sum_payload = false;  // the port sums every segment it cuts
  out.iface = r->iface;
  out.src = src.is_any() ? IpAddr(ifc.cfg.address.addr) : src;
  out.dst = dst;
  out.proto = wire::kIpProtoTcp;
  out.dont_fragment = true;
  out.next_hop = r->next_hop;
  out.broadcast = r->broadcast;
  return true;
}

void Stack::abort(L4Frame& f) { ifaces_[f.iface]->io.release(f.buf); }

// The headers come from the path's template: what emit_ipv4, finish_frame and the route and
// ARP lookups would have written, as long as the path holds (tx_path_cache.hpp). Inline
// into commit(), its only caller.
[[gnu::always_inline]] inline bool Stack::commit_on_path(Interface& ifc, L4Frame& f, Instant now) {
  const TxPath* p = paths_.find(f.dst.v4(), f.proto, f.src.v4());
  if (p == nullptr || p->iface != ifc.index || p->dont_fragment != f.dont_fragment ||
      p->arp_version != ifc.arp.version() || now >= p->quiet_until) {
    return false;
  }
  TxBuf& b = f.buf;
  const bool ip_offload = ifc.offloads.ipv4_cksum;
  const uint32_t pseudo =
      p->hdr.write(b.data, static_cast<uint16_t>(f.l4_size()), next_ip_id_++, ip_offload);
  if (ip_offload) b.flags |= kTxIpv4Cksum;
  detail::fill_l4(ifc.offloads, f, false, true, pseudo);
  transmit_on_path(ifc, b, kL3, counters_.ipv4_out);
  return true;
}

void Stack::commit(L4Frame& f, Instant now) {
  if (f.esp != nullptr) {
    commit_esp(f, now);
    return;
  }
  if (!f.dst.is_v4()) {
    commit6(f, now);
    return;
  }
  Interface& ifc = *ifaces_[f.iface];
  TxBuf& b = f.buf;
  // A TSO super-segment: the port writes every segment's IPv4 and TCP checksums,
  // seeded with a pseudo-header sum that leaves the length out (each segment
  // has its own length).
  const bool tso = (b.flags & kTxTcpSeg) != 0;
  if (!tso && !f.broadcast && commit_on_path(ifc, f, now)) return;
  auto l4_len = static_cast<uint16_t>(f.l4_size());
  wire::Ipv4Repr ip;
  ip.src = f.src.v4();
  ip.dst = f.dst.v4();
  ip.protocol = f.proto;
  ip.ttl = cfg_.default_ttl;
  ip.ident = next_ip_id_++;
  ip.dont_fragment = f.dont_fragment;
  ip.payload_len = l4_len;
  bool ip_offload = ifc.offloads.ipv4_cksum || tso;
  wire::emit_ipv4(b.data + kL2, ip, ip_offload);
  if (ip_offload) b.flags |= kTxIpv4Cksum;
  detail::fill_l4(ifc.offloads, f, tso, true, pseudo_sum(f.src, f.dst, f.proto, tso ? 0 : l4_len));
  b.l2_len = kL2;
  b.l3_len = kL3;
  finish_frame(ifc, b);
  ifc.io.seal(b);  // the frame may wait for ARP: out of any staging area first
  if (f.broadcast) {
    transmit_resolved(ifc, b, MacAddr::broadcast());
    return;
  }
  const Ipv4Addr hop = f.next_hop.v4();
  if (auto mac = ifc.arp.lookup_for_send(hop, now, ifc)) {
    keep_path(ifc, f, *mac, now);
    transmit_resolved(ifc, b, *mac);
    return;
  }
  hold_for_arp(ifc, b, hop, now);
}

void Stack::keep_path(const Interface& ifc, const L4Frame& f, const MacAddr& mac, Instant now) {
  // Only frames from the interface's own address: a path found for "any source" must be one.
  const Ipv4Addr src = f.src.v4();
  if (src != ifc.cfg.address.addr) return;
  const Ipv4Addr dst = f.dst.v4();
  TxPath& p = paths_.place(dst, f.proto);
  p.dst = dst;
  p.src = src;
  p.next_hop = f.next_hop.v4();
  p.proto = f.proto;
  p.dont_fragment = f.dont_fragment;
  p.iface = ifc.index;
  p.arp_version = ifc.arp.version();
  p.quiet_until = ifc.arp.quiet_until(p.next_hop, now);
  p.hdr.build(mac, ifc.cfg.mac, src, dst, f.proto, cfg_.default_ttl, f.dont_fragment);
}

void Stack::fill_l4_checksum(const Interface& ifc, L4Frame& f, bool tso, bool allow_offload) {
  const auto l4_len = static_cast<uint16_t>(f.l4_size());
  detail::fill_l4(ifc.offloads, f, tso, allow_offload,
                  pseudo_sum(f.src, f.dst, f.proto, tso ? 0 : l4_len));
}

void Stack::send_routed(Interface& ifc, TxBuf& b, Ipv4Addr dst, Instant now) {
  auto r = route(dst);
  send_to_hop(ifc, b, r ? r->next_hop : dst, r && r->broadcast, now);
}

void Stack::hold_for_arp(Interface& ifc, TxBuf& b, Ipv4Addr hop, Instant now) {
  if (ifc.arp.enqueue(hop, b, now, ifc) == ArpCache::Queued::kQueueFull) {
    drops_.add(DropReason::kArpQueueFull);
    ifc.io.release(b);
  }
  arp_deadline_ = Instant::from_ns(0);  // a request went out: re-evaluate timers
}

uint32_t Stack::mtu_to(IpAddr dst_addr) const {
  if (!dst_addr.is_v4()) {
    const Interface* ifc = route6(dst_addr.v6());
    return ifc != nullptr ? ifc->cfg.mtu : 0;
  }
  const Ipv4Addr dst = dst_addr.v4();
  if (esp_ != nullptr) {
    if (const ipsec::OutboundSa* sa = esp_->may_protect(dst, 0)) return esp_mtu(*sa, dst);
  }
  auto r = route(dst);
  return r ? ifaces_[r->iface]->cfg.mtu : 0;
}

IpAddr Stack::source_for(IpAddr dst_addr) const {
  if (!dst_addr.is_v4()) {
    const Interface* ifc = route6(dst_addr.v6());
    auto a = ifc != nullptr ? source_for6(*ifc, dst_addr.v6()) : std::nullopt;
    return a ? IpAddr(*a) : IpAddr(Ipv6Addr{});
  }
  auto r = route(dst_addr.v4());
  return r ? ifaces_[r->iface]->cfg.address.addr : Ipv4Addr::any();
}

bool Stack::source_pending(IpAddr dst_addr) const {
  if (dst_addr.is_v4()) return false;  // an IPv4 address is usable from the start
  const Interface* ifc = route6(dst_addr.v6());
  if (ifc == nullptr || !ifc->v6 || source_for6(*ifc, dst_addr.v6())) return false;
  const auto& addrs = ifc->v6->addrs;
  return std::any_of(addrs.begin(), addrs.end(), [](const Ipv6Iface::Address& a) {
    return a.state == Ipv6AddrState::kTentative;
  });
}

uint32_t Stack::free_buffers_to(IpAddr dst) const {
  // TCP asks this about three times per segment. With one interface (the usual data
  // plane) every route leads to it, so no lookup is needed; without a route nothing is
  // sent anyway (counted as no route).
  if (ifaces_.size() == 1) return ifaces_[0]->io.free_buffers();
  if (!dst.is_v4()) {
    const Interface* ifc = route6(dst.v6());
    return ifc != nullptr ? ifc->io.free_buffers() : 0;
  }
  auto r = route(dst.v4());
  return r ? ifaces_[r->iface]->io.free_buffers() : 0;
}

}  // namespace ws
