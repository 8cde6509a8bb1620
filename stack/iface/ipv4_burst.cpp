// IPv4 output of a burst of UDP datagrams to one destination: what begin_frame() and
// commit() do per datagram (route, next-hop lookup, buffer allocation, header layout)
// is done once per burst, and each datagram costs a template copy, its payload copy
// and the two checksums' per-datagram terms.
#include <algorithm>
#include <array>
#include <cstring>

#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"
#include "stack/iface/interface.hpp"
#include "stack/iface/ipv4_template.hpp"
#include "stack/ipsec/esp_layer.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/udp.hpp"

namespace ws {

namespace {
constexpr uint32_t kL2 = wire::EthernetView::kHeaderLen;
constexpr uint32_t kL3 = wire::Ipv4View::kMinHeaderLen;
constexpr uint32_t kUdpHl = wire::UdpView::kHeaderLen;
// Frames per allocation; a longer burst goes in several.
constexpr size_t kChunk = 64;

// The one's-complement sum of the 8-byte UDP header, inline: a call to csum_partial
// costs as much as the four additions.
uint32_t udp_header_sum(const uint8_t* h) {
  return uint32_t{load_be16(h)} + load_be16(h + 2) + load_be16(h + 4) + load_be16(h + 6);
}

// What every frame of the burst shares: the Ethernet and IPv4 headers (Ipv4Template) and
// which checksums the port computes.
struct BurstTemplate {
  Ipv4Template t;
  bool ip_offload = false;
  bool udp_offload = false;

  BurstTemplate(const MacAddr& dst_mac, const MacAddr& src_mac, Ipv4Addr src, Ipv4Addr dst,
                uint8_t ttl, const TxOffloads& o)
      : ip_offload(o.ipv4_cksum), udp_offload(o.udp_cksum) {
    // DF clear, as a kernel socket without PMTU discovery.
    t.build(dst_mac, src_mac, src, dst, wire::kIpProtoUdp, ttl, false);
  }

  // Writes datagram `g` with IPv4 identification `id` into `b`: the frame is complete.
  void write(TxBuf& b, const L4Datagram& g, uint16_t id) const {
    uint8_t* f = b.data;
    const auto l4_len = static_cast<uint16_t>(kUdpHl + g.payload.size());
    const uint32_t pseudo = t.write(f, l4_len, id, ip_offload);
    b.flags = 0;
    if (ip_offload) b.flags |= kTxIpv4Cksum;
    uint8_t* l4 = f + kL2 + kL3;
    std::memcpy(l4, g.header.data(), kUdpHl);
    if (udp_offload) {
      // The port sums the UDP header and payload onto the pseudo header's sum.
      // An empty span may hold a null pointer, which memcpy must not be given.
      if (!g.payload.empty()) std::memcpy(l4 + kUdpHl, g.payload.data(), g.payload.size());
      store_be16(l4 + wire::UdpView::kChecksumOff, csum_fold_raw(pseudo));
      b.flags |= kTxUdpCksum;
    } else {
      // The header (its length field included), then the payload, summed in the pass
      // that copies it (it starts at an even offset).
      uint32_t sum = pseudo + udp_header_sum(l4);
      sum = csum_add_at(sum, csum_copy(l4 + kUdpHl, g.payload), 0);
      const uint16_t c = csum_fold(sum);
      store_be16(l4 + wire::UdpView::kChecksumOff, c == 0 ? 0xffff : c);  // RFC 768
    }
    b.len = kL2 + kL3 + l4_len;
    pad_to_min_frame(b);
    b.l2_len = kL2;
    b.l3_len = kL3;
  }
};
}  // namespace

std::optional<size_t> Stack::send_udp_burst(IpAddr dst_addr, std::span<const L4Datagram> d,
                                            Instant now) {
  if (d.empty()) return 0;
  if (!dst_addr.is_v4()) return std::nullopt;
  const Ipv4Addr dst = dst_addr.v4();
  if (esp_ != nullptr && esp_->may_protect(dst, wire::kIpProtoUdp) != nullptr) return std::nullopt;
  const auto r = route(dst);
  if (!r) return std::nullopt;
  Interface& ifc = *ifaces_[r->iface];
  // RFC 1122 3.3.1: one route and one next-hop lookup hold for the whole burst (no time
  // passes within it). An unresolved next hop is left to the one-by-one path, which
  // queues behind ARP.
  const auto mac =
      r->broadcast ? std::optional(MacAddr::broadcast()) : ifc.arp.lookup(r->next_hop, now);
  if (!mac) return std::nullopt;
  uint32_t longest = 0;
  for (const L4Datagram& g : d) {
    if (g.header.size() != kUdpHl) return std::nullopt;
    longest = std::max(longest, static_cast<uint32_t>(kUdpHl + g.payload.size()));
  }
  if (kL3 + longest > ifc.cfg.mtu || kL2 + kL3 + longest > ifc.io.max_frame_len()) {
    return std::nullopt;  // fragments: the one-by-one path
  }
  const BurstTemplate t(*mac, ifc.cfg.mac, ifc.cfg.address.addr, dst, cfg_.default_ttl,
                        ifc.offloads);
  const uint32_t alloc_len = std::max<uint32_t>(60, kL2 + kL3 + longest);
  std::array<TxBuf, kChunk> bufs;
  size_t sent = 0;
  while (sent < d.size()) {
    const size_t want = std::min(kChunk, d.size() - sent);
    const size_t got = ifc.io.alloc_tx_bulk(alloc_len, std::span(bufs).first(want));
    if (got == 0 && sent == 0) return std::nullopt;  // no bulk buffers: the one-by-one path
    for (size_t i = 0; i < got; ++i) {
      t.write(bufs[i], d[sent + i], next_ip_id_++);
      ++counters_.ipv4_out;
      ++counters_.tx_frames;
      counters_.tx_bytes += bufs[i].len;
      ifc.io.transmit(bufs[i]);
    }
    sent += got;
    if (got < want) {
      drops_.add(DropReason::kNoMbuf);
      break;
    }
  }
  return sent;
}

}  // namespace ws
