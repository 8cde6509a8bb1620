// IPv4 output of datagrams larger than the interface MTU: fragmentation (RFC 791
// section 3.2, RFC 1122 section 3.3.3). The L4 checksum was computed over the
// whole datagram by the caller; every fragment is its own frame with a software
// header checksum, the same identification, 8-byte-aligned offsets and MF set on
// all but the last.
#include <algorithm>
#include <cstring>

#include "stack/core/checksum.hpp"
#include "stack/core/tx_writer.hpp"
#include "stack/iface/interface.hpp"
#include "stack/ipsec/esp_layer.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/ipv4.hpp"

namespace ws {

namespace {
constexpr uint32_t kL2 = wire::EthernetView::kHeaderLen;
constexpr uint32_t kL3 = wire::Ipv4View::kMinHeaderLen;

// Writes `n` bytes at logical offset `off` of head ++ body with `w` (across the
// frame's segments); false if the frame has no room for them.
bool write_range(TxWriter& w, std::span<const uint8_t> head, std::span<const uint8_t> body,
                 size_t off, size_t n) {
  if (off < head.size()) {
    size_t k = std::min(n, head.size() - off);
    if (!w.write(head.subspan(off, k))) return false;
    n -= k;
    off = head.size();
  }
  return n == 0 || w.write(body.subspan(off - head.size(), n));
}
}  // namespace

bool Stack::send_datagram(IpAddr src_addr, IpAddr dst_addr, uint8_t proto,
                          std::span<const uint8_t> head, std::span<const uint8_t> body,
                          bool dont_fragment, Instant now) {
  // IPv6 routers never fragment (RFC 8200 4.5): every IPv6 datagram may be cut here.
  if (!dst_addr.is_v4()) return send_datagram6(src_addr, dst_addr.v6(), proto, head, body, now);
  const Ipv4Addr src = src_addr.v4();
  const Ipv4Addr dst = dst_addr.v4();
  if (esp_ != nullptr) {
    if (ipsec::OutboundSa* sa = esp_->may_protect(dst, proto)) {
      return send_datagram_esp(*sa, src, dst, proto, head, body, now);
    }
  }
  return send_fragments(src, dst, proto, head, body, dont_fragment, now);
}

bool Stack::send_fragments(Ipv4Addr src, Ipv4Addr dst, uint8_t proto, std::span<const uint8_t> head,
                           std::span<const uint8_t> body, bool dont_fragment, Instant now) {
  auto r = route(dst);
  if (!r) {
    drops_.add(DropReason::kIpv4NoRoute);
    return false;
  }
  Interface& ifc = *ifaces_[r->iface];
  const size_t l4_len = head.size() + body.size();
  // The largest IP packet one frame of this port carries.
  const uint32_t max_frame = ifc.io.max_frame_len();
  const uint32_t mtu = std::min<uint32_t>(ifc.cfg.mtu, max_frame > kL2 ? max_frame - kL2 : 0);
  if (kL3 + l4_len > 65535 || (dont_fragment && kL3 + l4_len > mtu) || mtu < kL3 + 8) {
    drops_.add(DropReason::kFrameTooLong);
    return false;
  }
  // RFC 791 3.2: every fragment but the last carries a multiple of 8 data bytes.
  const size_t per_frag = kL3 + l4_len <= mtu ? l4_len : ((mtu - kL3) & ~size_t{7});
  const size_t count = (l4_len + per_frag - 1) / per_frag;
  // A datagram with a missing piece is worth nothing to the receiver: make sure
  // every fragment has a buffer before sending the first.
  if (ifc.io.free_buffers() < count) {
    drops_.add(DropReason::kNoMbuf);
    return false;
  }
  wire::Ipv4Repr ip;
  ip.src = src.is_any() ? ifc.cfg.address.addr : src;
  ip.dst = dst;
  ip.protocol = proto;
  ip.ttl = cfg_.default_ttl;
  ip.ident = next_ip_id_++;  // the same for every fragment (RFC 791 3.2)
  ip.dont_fragment = dont_fragment;
  for (size_t off = 0; off < l4_len; off += per_frag) {
    const size_t n = std::min(per_frag, l4_len - off);
    const auto len = static_cast<uint32_t>(kL2 + kL3 + n);
    // Headers in the first buffer, the fragment's data written straight into the
    // frame's segments (a chain at jumbo sizes), no staging copy.
    TxBuf b;
    if (!ifc.io.alloc_tx_gather(std::max(len, kMinEthernetFrame), kL2 + kL3, b)) {
      drops_.add(DropReason::kNoMbuf);
      return off != 0;  // fragments already sent are on their way
    }
    b.flags = 0;
    b.len = len;
    ip.frag_offset = static_cast<uint32_t>(off);
    ip.more_fragments = off + n < l4_len;
    ip.payload_len = static_cast<uint16_t>(n);
    wire::emit_ipv4(b.data + kL2, ip);
    const size_t first = std::min<size_t>(n, b.capacity - (kL2 + kL3));
    TxWriter w({b.data + kL2 + kL3, first}, b.more(), false);
    if (!write_range(w, head, body, off, n)) {  // cannot happen: the frame was sized for it
      ifc.io.release(b);
      drops_.add(DropReason::kFrameTooLong);
      return off != 0;
    }
    b.l2_len = kL2;
    b.l3_len = kL3;
    pad_to_min_frame(b);
    wire::emit_ethernet(b.data, MacAddr{}, ifc.cfg.mac, wire::kEtherTypeIpv4);
    ++counters_.ipv4_out;
    send_routed(ifc, b, dst, now);
  }
  return true;
}

}  // namespace ws
