// An IPv4 packet taken through the checks of the input path (version, IHL, total length,
// header checksum) and, when it passes them, into the ICMP, UDP and TCP views. Checks
// that no accessor reads outside the buffer (ASan), that the checksum agrees with a plain
// reference sum, and that emit_ipv4 reproduces an option-less header.
#include <cstring>

#include "stack/core/checksum.hpp"
#include "stack/wire/icmp.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/tcp.hpp"
#include "stack/wire/udp.hpp"
#include "tests/fuzz/seeds.hpp"

namespace {

std::vector<ws::fuzz::Bytes> ipv4_seeds() {
  return ws::fuzz::without_prefix(ws::fuzz::captured_ipv4_frames(), ws::testdata::kEthLen);
}

uint16_t ref_checksum(std::span<const uint8_t> d) {
  uint64_t s = 0;
  for (size_t i = 0; i < d.size(); ++i) s += (i % 2 == 0) ? uint32_t{d[i]} << 8 : d[i];
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(~s);
}

void check_l4(const ws::wire::Ipv4View& ip) {
  using namespace ws::wire;
  auto l4 = ip.payload();
  switch (ip.protocol()) {
    case kIpProtoIcmp:
      if (auto m = IcmpView::parse(l4)) {
        WS_FUZZ_CHECK(m->body().size() == l4.size() - IcmpView::kHeaderLen);
        (void)(m->type() + m->code() + m->echo_id() + m->echo_seq() + m->next_hop_mtu());
      } else {
        WS_FUZZ_CHECK(l4.size() < IcmpView::kHeaderLen);
      }
      break;
    case kIpProtoUdp:
      if (auto u = UdpView::parse(l4)) {
        if (u->length_valid()) {
          WS_FUZZ_CHECK(u->datagram().size() == u->length());
          WS_FUZZ_CHECK(u->payload().size() + UdpView::kHeaderLen == u->length());
          (void)ws::csum_partial(u->datagram(),
                                 ws::ipv4_pseudo_sum(ip.src(), ip.dst(), 17, u->length()));
        }
      } else {
        WS_FUZZ_CHECK(l4.size() < UdpView::kHeaderLen);
      }
      break;
    case kIpProtoTcp: {
      TcpView::Error err;
      if (auto t = TcpView::parse(l4, &err)) {
        WS_FUZZ_CHECK(t->header_len() >= TcpView::kMinHeaderLen && t->header_len() <= l4.size());
        WS_FUZZ_CHECK(t->seg_len() >= t->payload().size());
        ws::wire::TcpOptions o;
        if (t->parse_options(o)) WS_FUZZ_CHECK(o.sack_count <= o.sack.size());
      } else {
        WS_FUZZ_CHECK(err != TcpView::Error::kNone);
      }
      break;
    }
    default:
      break;
  }
}

}  // namespace

WS_FUZZ_TARGET(ipv4, ipv4_seeds) {
  using ws::wire::Ipv4View;
  auto ip = Ipv4View::parse(data);
  if (!ip) {
    WS_FUZZ_CHECK(data.size() < Ipv4View::kMinHeaderLen);
    return;
  }
  WS_FUZZ_CHECK(ip->buffer_len() == data.size());
  WS_FUZZ_CHECK(ip->header_len() == size_t{ip->ihl()} * 4);
  (void)(ip->tos() + ip->ident() + ip->ttl() + ip->checksum() + ip->src().v + ip->dst().v);
  if (ip->is_fragment()) WS_FUZZ_CHECK(ip->more_fragments() || ip->frag_offset() != 0);
  WS_FUZZ_CHECK(ip->frag_offset() % 8 == 0 && ip->frag_offset() <= 0x1fff * 8);

  // The input path's order of checks (RFC 1122 section 3.2.1.1 - 3.2.1.2).
  if (ip->version() != 4 || ip->ihl() < 5 || ip->header_len() > ip->buffer_len()) return;
  if (ip->total_len() < ip->header_len() || ip->total_len() > ip->buffer_len()) return;
  WS_FUZZ_CHECK(ip->header().size() == ip->header_len());
  WS_FUZZ_CHECK(ws::internet_checksum(ip->header()) == ref_checksum(ip->header()));
  WS_FUZZ_CHECK(ip->payload().size() == ip->total_len() - ip->header_len());
  check_l4(*ip);

  if (ip->ihl() == 5) {
    ws::wire::Ipv4Repr r;
    r.src = ip->src();
    r.dst = ip->dst();
    r.protocol = ip->protocol();
    r.ttl = ip->ttl();
    r.tos = ip->tos();
    r.ident = ip->ident();
    r.dont_fragment = ip->dont_fragment();
    r.more_fragments = ip->more_fragments();
    r.frag_offset = ip->frag_offset();
    r.payload_len = static_cast<uint16_t>(ip->total_len() - Ipv4View::kMinHeaderLen);
    uint8_t out[Ipv4View::kMinHeaderLen];
    ws::wire::emit_ipv4(out, r);
    WS_FUZZ_CHECK(ws::internet_checksum(out) == 0);
    uint8_t in[Ipv4View::kMinHeaderLen];
    std::memcpy(in, data.data(), sizeof in);
    in[6] &= 0x7f;  // the reserved flag bit is not represented in Ipv4Repr
    WS_FUZZ_CHECK(std::memcmp(out, in, 10) == 0);
    WS_FUZZ_CHECK(std::memcmp(out + 12, in + 12, 8) == 0);
  }
}
