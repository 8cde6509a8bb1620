#include "tests/support/frames.hpp"

#include <algorithm>

#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/icmp.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/udp.hpp"
#include "tests/support/fake_io.hpp"

namespace ws::test {

namespace {

constexpr size_t kEth = wire::EthernetView::kHeaderLen;

// Appends the Ethernet header for `eth` and returns the payload offset.
size_t put_ethernet(std::vector<uint8_t>& out, const EthSpec& eth, uint16_t default_type) {
  uint16_t type = eth.ethertype.value_or(default_type);
  if (eth.vlan_tci) {
    out.resize(kEth + wire::EthernetView::kVlanTagLen);
    return wire::emit_ethernet_vlan(out.data(), eth.dst, eth.src, *eth.vlan_tci, type);
  }
  out.resize(kEth);
  return wire::emit_ethernet(out.data(), eth.dst, eth.src, type);
}

}  // namespace

std::vector<uint8_t> arp_frame(const EthSpec& eth, const ArpSpec& a, bool pad_to_min) {
  std::vector<uint8_t> f;
  size_t off = put_ethernet(f, eth, wire::kEtherTypeArp);
  f.resize(off + wire::ArpView::kLen);
  uint8_t* p = f.data() + off;
  wire::emit_arp(p, a.arp);
  if (a.htype) store_be16(p + wire::ArpView::kHtypeOff, *a.htype);
  if (a.ptype) store_be16(p + wire::ArpView::kPtypeOff, *a.ptype);
  if (a.hlen) p[wire::ArpView::kHlenOff] = *a.hlen;
  if (a.plen) p[wire::ArpView::kPlenOff] = *a.plen;
  if (a.op_raw) store_be16(p + wire::ArpView::kOpOff, *a.op_raw);
  if (pad_to_min && f.size() < 60) f.resize(60, 0);
  return f;
}

std::vector<uint8_t> ipv4_frame(const EthSpec& eth, const Ipv4Spec& ip,
                                std::span<const uint8_t> l4) {
  std::vector<uint8_t> f;
  size_t off = put_ethernet(f, eth, wire::kEtherTypeIpv4);
  size_t opt_len = (ip.options.size() + 3) / 4 * 4;
  size_t hl = wire::Ipv4View::kMinHeaderLen + opt_len;
  f.resize(off + hl + l4.size() + ip.pad, 0);
  uint8_t* h = f.data() + off;

  wire::Ipv4Repr r;
  r.src = ip.src;
  r.dst = ip.dst;
  r.protocol = ip.protocol_override.value_or(ip.protocol);
  r.ttl = ip.ttl;
  r.tos = ip.tos;
  r.ident = ip.ident;
  r.dont_fragment = ip.dont_fragment;
  r.more_fragments = ip.more_fragments;
  r.frag_offset = ip.frag_offset;
  r.payload_len = static_cast<uint16_t>(opt_len + l4.size());
  wire::emit_ipv4(h, r, true);
  std::copy(ip.options.begin(), ip.options.end(), h + wire::Ipv4View::kMinHeaderLen);
  std::copy(l4.begin(), l4.end(), h + hl);

  uint8_t version = ip.version.value_or(4);
  uint8_t ihl = ip.ihl.value_or(static_cast<uint8_t>(hl / 4));
  h[wire::Ipv4View::kVerIhlOff] = static_cast<uint8_t>((version << 4) | (ihl & 0x0f));
  if (ip.total_len) store_be16(h + wire::Ipv4View::kTotalLenOff, *ip.total_len);
  uint16_t c = csum_fold(csum_partial({h, hl}));
  if (ip.corrupt_checksum) c = static_cast<uint16_t>(c ^ 0x0101);
  store_be16(h + wire::Ipv4View::kChecksumOff, ip.checksum.value_or(c));
  return f;
}

std::vector<uint8_t> udp_frame(const EthSpec& eth, const Ipv4Spec& ip_in, const UdpSpec& u,
                               std::span<const uint8_t> payload) {
  std::vector<uint8_t> seg(wire::UdpView::kHeaderLen + payload.size());
  wire::emit_udp(seg.data(), u.src_port, u.dst_port, static_cast<uint16_t>(payload.size()));
  std::copy(payload.begin(), payload.end(), seg.begin() + wire::UdpView::kHeaderLen);
  if (u.length) store_be16(seg.data() + wire::UdpView::kLengthOff, *u.length);
  uint32_t pseudo =
      ipv4_pseudo_sum(ip_in.src, ip_in.dst, wire::kIpProtoUdp, static_cast<uint16_t>(seg.size()));
  uint16_t c = csum_fold(csum_partial(seg, pseudo));
  if (c == 0) c = 0xffff;
  if (u.corrupt_checksum) c = static_cast<uint16_t>(c ^ 0x0101);
  store_be16(seg.data() + wire::UdpView::kChecksumOff, u.checksum.value_or(c));
  Ipv4Spec ip = ip_in;
  ip.protocol = wire::kIpProtoUdp;
  return ipv4_frame(eth, ip, seg);
}

std::vector<uint8_t> icmp_frame(const EthSpec& eth, const Ipv4Spec& ip_in, const IcmpSpec& m,
                                std::span<const uint8_t> payload) {
  std::vector<uint8_t> msg(wire::IcmpView::kHeaderLen + payload.size());
  std::copy(payload.begin(), payload.end(), msg.begin() + wire::IcmpView::kHeaderLen);
  uint32_t rest = m.rest.value_or((uint32_t{m.id} << 16) | m.seq);
  wire::emit_icmp(msg.data(), m.type, m.code, rest, payload.size());
  if (m.corrupt_checksum) msg[wire::IcmpView::kChecksumOff] ^= 0x01;
  Ipv4Spec ip = ip_in;
  ip.protocol = wire::kIpProtoIcmp;
  return ipv4_frame(eth, ip, msg);
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((seed + i * 7) % 251);
  return v;
}

namespace {
// The IPv4 datagram inside an untagged frame, bounded by its total length.
std::optional<wire::Ipv4View> datagram(std::span<const uint8_t> frame) {
  if (frame.size() < kEth) return std::nullopt;
  auto ip = wire::Ipv4View::parse(frame.subspan(kEth));
  if (!ip || ip->header_len() < 20 || ip->total_len() > ip->buffer_len() ||
      ip->total_len() < ip->header_len()) {
    return std::nullopt;
  }
  return wire::Ipv4View::parse(frame.subspan(kEth, ip->total_len()));
}
}  // namespace

bool ipv4_checksum_ok(std::span<const uint8_t> frame) {
  auto ip = datagram(frame);
  return ip && internet_checksum(ip->header()) == 0;
}

bool udp_checksum_ok(std::span<const uint8_t> frame) {
  auto ip = datagram(frame);
  if (!ip || ip->protocol() != wire::kIpProtoUdp) return false;
  auto seg = ip->payload();
  uint32_t pseudo =
      ipv4_pseudo_sum(ip->src(), ip->dst(), wire::kIpProtoUdp, static_cast<uint16_t>(seg.size()));
  return csum_fold(csum_partial(seg, pseudo)) == 0;
}

bool icmp_checksum_ok(std::span<const uint8_t> frame) {
  auto ip = datagram(frame);
  return ip && ip->protocol() == wire::kIpProtoIcmp && internet_checksum(ip->payload()) == 0;
}

void complete_tx_offloads(SentFrame& f) {
  if (f.l2_len == 0 || f.l3_len == 0 || f.bytes.size() < size_t{f.l2_len} + f.l3_len) return;
  uint8_t* ip = f.bytes.data() + f.l2_len;
  if (f.flags & kTxIpv4Cksum) {
    store_be16(ip + wire::Ipv4View::kChecksumOff, 0);
    store_be16(ip + wire::Ipv4View::kChecksumOff, internet_checksum({ip, f.l3_len}));
  }
  size_t total = load_be16(ip + wire::Ipv4View::kTotalLenOff);
  if (total < f.l3_len || f.l2_len + total > f.bytes.size()) return;
  std::span<uint8_t> l4{ip + f.l3_len, total - f.l3_len};
  // The stack pre-seeded the checksum field with the pseudo-header sum; the NIC
  // sums the segment including that field and stores the complement.
  size_t off = 0;
  if ((f.flags & kTxUdpCksum) && l4.size() >= wire::UdpView::kHeaderLen) {
    off = wire::UdpView::kChecksumOff;
  } else if ((f.flags & kTxTcpCksum) && l4.size() >= 20) {
    off = 16;
  } else {
    return;
  }
  uint16_t c = csum_fold(csum_partial(l4));
  if (c == 0 && off == wire::UdpView::kChecksumOff) c = 0xffff;
  store_be16(l4.data() + off, c);
}

}  // namespace ws::test
