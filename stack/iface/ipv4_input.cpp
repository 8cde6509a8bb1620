// IPv4 input, validated step by step (RFC 791 section 3.2, RFC 1122 section
// 3.2.1, RFC 1812 section 5.2.2); every failed step is counted under its reason.
#include <algorithm>

#include "stack/core/checksum.hpp"
#include "stack/iface/interface.hpp"
#include "stack/wire/esp.hpp"
#include "stack/wire/icmp.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/udp.hpp"

namespace ws {

namespace {
// Stack::is_local's walk, inline where every packet asks it twice (ipv4_input).
template <class Ifaces>
[[gnu::always_inline]] inline bool local_address(const Ifaces& ifaces, Ipv4Addr a,
                                                 bool& broadcast) {
  broadcast = a.is_broadcast();
  if (broadcast) return true;
  for (const auto& ifc : ifaces) {
    if (a == ifc->cfg.address.addr) return true;
    if (ifc->cfg.address.prefix_len < 31 && a == ifc->cfg.address.directed_broadcast()) {
      broadcast = true;
      return true;
    }
  }
  return false;
}
}  // namespace

bool Stack::is_local(Ipv4Addr a, bool& broadcast) const {
  return local_address(ifaces_, a, broadcast);
}

// Inline into ipv4_input, its only caller (twice): every packet received goes through it.
[[gnu::always_inline]] inline void Stack::ipv4_deliver(Interface& ifc, const PacketView& whole,
                                                       const wire::Ipv4View& ip, const RxMeta& meta,
                                                       bool no_icmp_error, bool to_broadcast,
                                                       Instant now) {
  const size_t hl = ip.header_len();
  Ipv4Addr src = ip.src();
  Ipv4Addr dst = ip.dst();
  ++counters_.ipv4_in;
  if (esp_ != nullptr) {
    if (ip.protocol() == wire::kIpProtoEsp && rx_sa_ == nullptr) {
      esp_input(ifc, whole, ip, meta, now);
      return;
    }
    if (!esp_policy_allows(whole, ip)) return;  // counted
  }
  auto l4 = whole.tail(hl);
  switch (ip.protocol()) {
    case wire::kIpProtoIcmp:
      icmp_input(ifc, src, dst, l4, now);
      return;
    case wire::kIpProtoUdp:
      udp_input(whole, hl, src, dst, no_icmp_error, meta.l4, now);
      return;
    case wire::kIpProtoTcp:
      if (meta.l4 == RxMeta::Cksum::kBad) {
        drops_.add(DropReason::kTcpBadChecksum);
        return;
      }
      if (tcp_ != nullptr && !to_broadcast) {
        ++counters_.tcp_in;
        tcp_->input(src, dst, l4, meta.l4 == RxMeta::Cksum::kGood, now);
        return;
      }
      drops_.add(DropReason::kIpv4UnknownProtocol);
      if (!no_icmp_error) {
        send_icmp_error(wire::kIcmpDestUnreachable, wire::kIcmpCodeProtoUnreachable, 0, whole, now);
      }
      return;
    default:
      // RFC 1122 3.2.2.1: protocol unreachable for a transport we do not run.
      drops_.add(DropReason::kIpv4UnknownProtocol);
      if (!no_icmp_error) {
        send_icmp_error(wire::kIcmpDestUnreachable, wire::kIcmpCodeProtoUnreachable, 0, whole, now);
      }
      return;
  }
}

// Splitting the header read out cost 3 instructions per packet (callgrind, rx_path_bench).
// long: the RFC 1122 3.2.1 checks in their order, on the per-packet receive path
void Stack::ipv4_input(Interface& ifc, const PacketView& pkt, const RxMeta& meta,
                       bool link_broadcast, Instant now) {
  // The header is read in place unless it straddles a segment boundary; then
  // only its bytes (at most 60) are pulled up.
  uint8_t hdr_buf[wire::Ipv4View::kMaxHeaderLen];
  // 1. The fixed header must be there.
  auto fixed = pkt.pullup(std::min(pkt.size(), wire::Ipv4View::kMinHeaderLen), hdr_buf,
                          counters_.rx_header_pullups);
  auto ip = wire::Ipv4View::parse(fixed);
  if (!ip) {
    drops_.add(DropReason::kIpv4Truncated);
    return;
  }
  // 2. Version 4 (RFC 791 3.1).
  if (ip->version() != 4) {
    drops_.add(DropReason::kIpv4BadVersion);
    return;
  }
  // 3. IHL: at least 5 words, and the header fits in what arrived.
  size_t hl = ip->header_len();
  if (hl < wire::Ipv4View::kMinHeaderLen || hl > pkt.size()) {
    drops_.add(DropReason::kIpv4BadIhl);
    return;
  }
  if (hl > fixed.size()) {
    // Options: the whole header in one span. If the fixed part was pulled up
    // already, only the options are added behind it (one pull-up counted).
    if (fixed.data() == hdr_buf) {
      pkt.copy_out(fixed.size(), std::span(hdr_buf).subspan(fixed.size(), hl - fixed.size()));
      ip = wire::Ipv4View::parse(std::span<const uint8_t>(hdr_buf, hl));
    } else {
      ip = wire::Ipv4View::parse(pkt.pullup(hl, hdr_buf, counters_.rx_header_pullups));
    }
  }
  // 4. Total length covers the header and does not exceed the frame (anything
  //    beyond it is Ethernet padding, or the unused end of a chain, and is ignored).
  size_t total = ip->total_len();
  if (total < hl || total > pkt.size()) {
    // A packet longer than the MTU cannot have been sent whole on this link: the
    // kernel under an af_packet port reassembled fragments (the PMD joins its
    // sockets to a fanout group with PACKET_FANOUT_FLAG_DEFRAG) and the socket's
    // ring cut the datagram at its frame size. Counted apart so that an operator
    // can tell it from a malformed header (docs/troubleshooting.md).
    drops_.add(total > hl && pkt.size() > ifc.cfg.mtu ? DropReason::kRxTruncated
                                                      : DropReason::kIpv4BadTotalLength);
    return;
  }
  // 5. Header checksum, unless the NIC already verified it (RFC 1122 3.2.1.2).
  if (meta.ip == RxMeta::Cksum::kBad ||
      (meta.ip != RxMeta::Cksum::kGood && internet_checksum(ip->header()) != 0)) {
    drops_.add(DropReason::kIpv4BadChecksum);
    return;
  }
  // 6. A source that is broadcast, multicast or "this host on this net" with
  //    payload is invalid (RFC 1122 3.2.1.3, RFC 1812 5.3.7).
  Ipv4Addr src = ip->src();
  Ipv4Addr dst = ip->dst();
  if (src.is_broadcast() || src.is_multicast() || src.is_loopback()) {
    drops_.add(DropReason::kIpv4BadSource);
    return;
  }
  //    A directed broadcast of one of our subnets is not a host either; answering
  //    it would broadcast our reply to the whole link.
  bool src_broadcast = false;
  if (local_address(ifaces_, src, src_broadcast) && src_broadcast) {
    drops_.add(DropReason::kIpv4BadSource);
    return;
  }
  // 7. Addressed to us: one of our addresses, limited or directed broadcast.
  bool to_broadcast = false;
  if (!local_address(ifaces_, dst, to_broadcast)) {
    drops_.add(DropReason::kIpv4NotForUs);
    return;
  }
  // 8. A datagram that arrives with TTL 0 was sent by a broken host (RFC 1122
  //    3.2.1.7: a host must never send TTL 0); drop it rather than act on it.
  if (ip->ttl() == 0) {
    drops_.add(DropReason::kIpv4TtlExpired);
    return;
  }
  // RFC 1122 3.2.2: no ICMP error about a datagram sent to a broadcast address,
  // IP or link layer.
  bool no_icmp_error = to_broadcast || link_broadcast;
  // 9. Fragments go to the reassembly table (RFC 791 3.2, RFC 1122 3.3.2); the
  //    datagram they complete continues below as if it had arrived whole, its L4
  //    checksum verified in software (the NIC saw only pieces).
  //    A chained fragment is copied into one span first: the table copies its
  //    payload anyway.
  if (ip->is_fragment()) {
    auto whole = reasm_.input(linearize(pkt.first(total)), now, drops_);
    if (!whole) return;
    RxMeta m = meta;
    m.ip = RxMeta::Cksum::kGood;
    m.l4 = RxMeta::Cksum::kUnknown;
    auto wip = wire::Ipv4View::parse(*whole);
    ipv4_deliver(ifc, PacketView(*whole), *wip, m, no_icmp_error, to_broadcast, now);
    return;
  }
  ipv4_deliver(ifc, pkt.first(total), *ip, meta, no_icmp_error, to_broadcast, now);
}

void Stack::udp_input(const PacketView& ip_packet, size_t ip_hl, Ipv4Addr src, Ipv4Addr dst,
                      bool to_broadcast, RxMeta::Cksum l4_csum, Instant now) {
  if (udp_receive(ip_packet.tail(ip_hl), src, dst, l4_csum, now)) return;
  // RFC 1122 4.1.3.1: port unreachable, but never in answer to a broadcast.
  if (!to_broadcast) {
    send_icmp_error(wire::kIcmpDestUnreachable, wire::kIcmpCodePortUnreachable, 0, ip_packet, now);
  }
}

bool Stack::udp_receive(const PacketView& seg, IpAddr src, IpAddr dst, RxMeta::Cksum l4_csum,
                        Instant now) {
  uint8_t hdr_buf[wire::UdpView::kHeaderLen];
  auto udp = wire::UdpView::parse(seg.pullup(std::min(seg.size(), wire::UdpView::kHeaderLen),
                                             hdr_buf, counters_.rx_header_pullups));
  if (!udp) {
    drops_.add(DropReason::kUdpTruncated);
    return true;
  }
  // RFC 768: the length field covers header and data; it must fit the IP payload.
  const size_t udp_len = udp->length();
  if (udp_len < wire::UdpView::kHeaderLen || udp_len > seg.size()) {
    drops_.add(DropReason::kUdpBadLength);
    return true;
  }
  auto datagram = seg.first(udp_len);
  const uint16_t csum = udp->checksum();
  // A zero checksum means the sender did not compute one (RFC 768); over IPv6 the
  // checksum is mandatory (RFC 8200 8.1). Otherwise trust the NIC's verdict when it
  // gave one, as for the IPv4 header and TCP.
  if (csum == 0 && !src.is_v4()) {
    drops_.add(DropReason::kUdp6ZeroChecksum);
    return true;
  }
  if (l4_csum == RxMeta::Cksum::kBad && csum != 0) {
    drops_.add(DropReason::kUdpBadChecksum);
    return true;
  }
  if (l4_csum != RxMeta::Cksum::kGood && csum != 0) {
    uint32_t sum = pseudo_sum(src, dst, wire::kIpProtoUdp, static_cast<uint32_t>(udp_len));
    if (csum_fold(datagram.csum(sum)) != 0) {
      drops_.add(DropReason::kUdpBadChecksum);
      return true;
    }
  }
  ++counters_.udp_in[family_index(src)];
  // Sockets read a datagram as one span: a chained one is copied here, after
  // every check passed (UDP payloads are messages, not a stream to splice).
  const PacketView payload = datagram.tail(wire::UdpView::kHeaderLen);
  // In the frame's own buffer, which the data plane keeps to the end of the burst; a copy
  // (linearized, reassembled) is not.
  const bool held = rx_burst_open_ && payload.holder() != nullptr && payload.contiguous();
  UdpDatagram d{Endpoint{src, udp->src_port()}, Endpoint{dst, udp->dst_port()}, linearize(payload)};
  if (udp_.deliver(d, now, held)) return true;
  drops_.add(DropReason::kUdpPortUnreachable);
  return false;
}

}  // namespace ws
