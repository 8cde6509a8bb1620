// IPsec ESP on the IPv4 paths (RFC 4303 3.3 outbound, 3.4 inbound; RFC 4301 5.1 / 5.2 policy
// checks). Outbound frames to a peer a protect policy may cover are laid out with room for
// the SA's header, IV, trailer and ICV, and sealed on commit once their ports name the exact
// policy. Inbound ESP is matched to an SA by SPI and addresses, checked against the replay
// window, decrypted, accepted into the window, and its inner packet goes through IPv4 input
// again, where the policy must name the SA it came through.
#include <algorithm>
#include <cstring>

#include "stack/core/checksum.hpp"
#include "stack/iface/interface.hpp"
#include "stack/ipsec/esp.hpp"
#include "stack/ipsec/esp_layer.hpp"
#include "stack/wire/esp.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/icmp.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/udp.hpp"

namespace ws {

namespace {

constexpr uint32_t kL2 = wire::EthernetView::kHeaderLen;
constexpr uint32_t kL3 = wire::Ipv4View::kMinHeaderLen;

bool has_ports(uint8_t proto) { return proto == wire::kIpProtoTcp || proto == wire::kIpProtoUdp; }

// Source and destination ports of a TCP or UDP header (both start with them); 0 otherwise.
void read_ports(uint8_t proto, std::span<const uint8_t> l4, uint16_t& src, uint16_t& dst) {
  src = dst = 0;
  if (!has_ports(proto) || l4.size() < 4) return;
  src = load_be16(l4.data());
  dst = load_be16(l4.data() + 2);
}

// The frame's sequence number (RFC 4303 3.3.3), or the reason it has none: the next
// block is not reserved yet, or the SA has used them all and must be rekeyed.
bool take_sequence(ipsec::OutboundSa& sa, ipsec::EspSeq& seq, DropReason& why) {
  switch (sa.seq.take(seq)) {
    case ipsec::OutboundSequence::Take::ok:
      return true;
    case ipsec::OutboundSequence::Take::wait:
      why = DropReason::kIpsecSeqUnreserved;
      return false;
    case ipsec::OutboundSequence::Take::exhausted:
      sa.counters.add(ipsec::SaError::sequence_exhausted);
      why = DropReason::kIpsecSaError;
      return false;
  }
  why = DropReason::kIpsecSaError;
  return false;
}

}  // namespace

bool Stack::begin_esp_frame(ipsec::OutboundSa& sa, Ipv4Addr src, Ipv4Addr dst, uint8_t proto,
                            uint32_t l4_len, L4Frame& out) {
  const bool tunnel = sa.mode == ipsec::Mode::tunnel;
  auto r = route(tunnel ? sa.remote : dst);
  if (!r) {
    drops_.add(DropReason::kIpv4NoRoute);
    return false;
  }
  Interface& ifc = *ifaces_[r->iface];
  const uint32_t inner_len = l4_len + (tunnel ? kL3 : 0);
  const uint32_t esp = ipsec::esp_len(sa.cipher, inner_len);
  const uint32_t len = kL2 + kL3 + esp;
  if (kL3 + esp > ifc.cfg.mtu || len > ifc.io.max_frame_len()) {
    drops_.add(DropReason::kFrameTooLong);
    return false;
  }
  // One contiguous buffer: the trailer and ICV follow the payload, and no port offload can
  // reach inside the ciphertext (the L4 checksum is computed in software, summed as the
  // payload is copied in).
  if (!ifc.io.alloc_tx(std::max(len, 60u), out.buf)) {
    drops_.add(DropReason::kNoMbuf);
    return false;
  }
  out.buf.len = len;
  out.buf.flags = 0;
  lay_out_l4(out, l4_len, kL2 + kL3 + ipsec::esp_head_len(sa.cipher) + (tunnel ? kL3 : 0));
  out.iface = r->iface;
  out.src = src.is_any() ? ifc.cfg.address.addr : src;
  out.dst = dst;
  out.proto = proto;
  out.dont_fragment = true;
  out.sum_payload = true;
  out.esp = &sa;
  // A port bypass sends the frame in plaintext after all (commit_esp): transport mode only,
  // whose route is dst's.
  out.next_hop = r->next_hop;
  out.broadcast = r->broadcast;
  return true;
}

void Stack::commit_esp(L4Frame& f, Instant now) {
  Interface& ifc = *ifaces_[f.iface];
  ipsec::OutboundSa& sa = *f.esp;
  TxBuf& b = f.buf;
  auto drop = [&](DropReason why) {
    drops_.add(why);
    ifc.io.release(b);
  };
  const bool tunnel = sa.mode == ipsec::Mode::tunnel;
  uint16_t lp = 0, rp = 0;
  read_ports(f.proto, f.l4, lp, rp);
  const ipsec::Decision d = esp_->lookup(f.dst.v4(), f.proto, lp, rp);
  if (d.action == ipsec::PolicyAction::bypass && !tunnel) {
    // A port-specific bypass ahead of the protect policy: the same frame, in plaintext.
    std::memmove(b.data + kL2 + kL3, f.l4.data(), f.l4.size());
    f.l4 = {b.data + kL2 + kL3, f.l4.size()};
    b.len = kL2 + kL3 + static_cast<uint32_t>(f.l4.size());
    f.esp = nullptr;
    commit(f, now);
    return;
  }
  if (d.action != ipsec::PolicyAction::protect || d.outbound != &sa) {
    drop(DropReason::kIpsecPolicy);
    return;
  }
  ipsec::EspSeq seq;
  if (DropReason why; !take_sequence(sa, seq, why)) {
    drop(why);
    return;
  }
  fill_l4_checksum(ifc, f, false, false);
  const auto l4_len = static_cast<uint16_t>(f.l4_size());
  wire::Ipv4Repr ip;
  ip.ttl = cfg_.default_ttl;
  ip.dont_fragment = f.dont_fragment;
  if (tunnel) {
    ip.src = f.src.v4();
    ip.dst = f.dst.v4();
    ip.protocol = f.proto;
    ip.ident = next_ip_id_++;
    ip.payload_len = l4_len;
    wire::emit_ipv4(f.l4.data() - kL3, ip);
  }
  const uint32_t inner_len = l4_len + (tunnel ? kL3 : 0);
  const uint8_t nh = tunnel ? wire::kIpProtoIpv4 : f.proto;
  uint8_t* esp = b.data + kL2 + kL3;
  // CBC frames in their own buffers wait for a burst of jobs; a staged frame cannot wait.
  ipsec::CbcBurst& burst = esp_->cbc_burst();
  const bool hold = !ipsec::is_gcm(sa.cipher) && !b.staged;
  uint32_t n = 0;
  if (hold) {
    n = ipsec::esp_seal_cbc_prepare(esp_->engine(), *sa.keys, sa.spi, seq, sa.esn, nh, esp,
                                    inner_len, burst.ops[burst.n], burst.tags[burst.n].data());
  } else {
    n = ipsec::esp_seal(esp_->engine(), *sa.keys, sa.spi, seq, sa.esn, nh, esp, inner_len);
  }
  ip.src = tunnel ? sa.local : f.src.v4();
  ip.dst = tunnel ? sa.remote : f.dst.v4();
  ip.protocol = wire::kIpProtoEsp;
  ip.ident = next_ip_id_++;
  ip.payload_len = static_cast<uint16_t>(n);
  wire::emit_ipv4(b.data + kL2, ip, ifc.offloads.ipv4_cksum);
  if (ifc.offloads.ipv4_cksum) b.flags |= kTxIpv4Cksum;
  b.l2_len = kL2;
  b.l3_len = kL3;
  ++sa.counters.packets;
  sa.counters.bytes += inner_len;
  finish_frame(ifc, b);
  if (!hold) {
    send_routed(ifc, b, ip.dst, now);
    return;
  }
  burst.frames[burst.n++] = {b, f.iface, ip.dst};
  if (burst.n == ipsec::CbcBurst::kMax) flush_esp(now);
}

void Stack::flush(Instant now) {
  if (esp_ == nullptr) return;
  // Received first: what they are answered with joins the outbound burst.
  if (esp_->cbc_rx_burst().n != 0) flush_esp_rx(now);
  if (esp_->cbc_burst().n != 0) flush_esp(now);
}

void Stack::release_held_esp() {
  if (esp_ == nullptr) return;
  ipsec::CbcBurst& burst = esp_->cbc_burst();
  for (size_t i = 0; i < burst.n; ++i)
    ifaces_[burst.frames[i].iface]->io.release(burst.frames[i].buf);
  burst.n = 0;
  esp_->cbc_rx_burst().n = 0;  // copies only: nothing to give back
}

void Stack::flush_esp(Instant now) {
  ipsec::CbcBurst& burst = esp_->cbc_burst();
  const size_t n = burst.n;
  burst.n = 0;
  ipsec::cbc_hmac_seal(esp_->engine(), std::span(burst.ops.data(), n));
  for (size_t i = 0; i < n; ++i) {
    auto& fr = burst.frames[i];
    Interface& ifc = *ifaces_[fr.iface];
    if (!burst.ops[i].done) {  // the library refused the job: nothing sealed, nothing sent
      drops_.add(DropReason::kIpsecSaError);
      ifc.io.release(fr.buf);
      continue;
    }
    ipsec::esp_seal_cbc_finish(burst.ops[i]);
    send_routed(ifc, fr.buf, fr.next_dst, now);
  }
}

uint32_t Stack::esp_mtu(const ipsec::OutboundSa& sa, Ipv4Addr dst) const {
  auto r = route(sa.mode == ipsec::Mode::tunnel ? sa.remote : dst);
  if (!r) return 0;
  const uint32_t link = ifaces_[r->iface]->cfg.mtu;
  return sa.inner_mtu(sa.path_mtu != 0 ? std::min(link, sa.path_mtu) : link);
}

void Stack::esp_frag_needed(const wire::IcmpView& icmp, const wire::Ipv4View& quoted_ip,
                            std::span<const uint8_t> quoted) {
  // RFC 792: the quote holds the IPv4 header and at least 8 bytes, here SPI and sequence.
  const size_t hl = quoted_ip.header_len();
  if (icmp.type() != wire::kIcmpDestUnreachable || icmp.code() != wire::kIcmpCodeFragNeeded ||
      quoted.size() < hl + wire::EspView::kHeaderLen) {
    return;
  }
  const uint32_t spi = load_be32(quoted.data() + hl + wire::EspView::kSpiOff);
  esp_->path_mtu_reduced(quoted_ip.src(), quoted_ip.dst(), spi, icmp.next_hop_mtu());
}

bool Stack::esp_policy_allows(const PacketView& whole, const wire::Ipv4View& ip) {
  const size_t hl = ip.header_len();
  uint8_t ports[4];
  auto l4 = whole.tail(hl);
  uint16_t rp = 0, lp = 0;
  if (l4.size() >= 4)
    read_ports(ip.protocol(), l4.pullup(4, ports, counters_.rx_header_pullups), rp, lp);
  const ipsec::Decision d = esp_->lookup(ip.src(), ip.protocol(), lp, rp);
  // RFC 4301 5.2: what arrived through an SA must be what the policy sends through it;
  // plaintext only where the policy says bypass.
  const bool ok = rx_sa_ != nullptr
                      ? d.action == ipsec::PolicyAction::protect && d.inbound == rx_sa_
                      : d.action == ipsec::PolicyAction::bypass;
  if (!ok) drops_.add(DropReason::kIpsecPolicy);
  return ok;
}

void Stack::esp_input(Interface& ifc, const PacketView& whole, const wire::Ipv4View& ip,
                      const RxMeta& meta, Instant now) {
  const size_t hl = ip.header_len();
  const PacketView esp = whole.tail(hl);
  uint8_t hb[wire::EspView::kHeaderLen];
  auto h = wire::EspView::parse(
      esp.pullup(std::min(esp.size(), wire::EspView::kHeaderLen), hb, counters_.rx_header_pullups));
  if (!h) {
    drops_.add(DropReason::kIpsecMalformed);
    return;
  }
  ipsec::InboundSa* sa = esp_->find_inbound(h->spi(), ip.src(), ip.dst());
  if (sa == nullptr) {
    drops_.add(DropReason::kIpsecNoSa);
    return;
  }
  auto sa_error = [&](ipsec::SaError e) {
    sa->counters.add(e);
    drops_.add(DropReason::kIpsecSaError);
  };
  auto replay_error = [&](ipsec::ReplayVerdict v) {
    sa_error(v == ipsec::ReplayVerdict::replayed ? ipsec::SaError::replayed
                                                 : ipsec::SaError::outside_window);
  };
  // RFC 4303 3.4.3: the window is checked before the (costly) integrity check.
  ipsec::EspSeq seq;
  if (!sa->replay.infer(h->seq_low(), seq)) {
    sa_error(ipsec::SaError::outside_window);
    return;
  }
  if (auto v = sa->replay.check(seq); v != ipsec::ReplayVerdict::ok) {
    replay_error(v);
    return;
  }
  const auto n = static_cast<uint32_t>(esp.size());
  ipsec::CbcRxBurst& burst = esp_->cbc_rx_burst();
  if (!ipsec::is_gcm(sa->cipher) && !burst.delivering &&
      n <= ipsec::CbcRxBurst::kSlotLen - ipsec::CbcRxBurst::kHeadroom) {
    hold_esp_rx(ifc, whole, hl, esp, *sa, seq, meta, now);
    return;
  }
  std::span<uint8_t> scratch = esp_->rx_scratch();
  if (n > scratch.size() - ipsec::EspLayer::kScratchHeadroom) {
    drops_.add(DropReason::kIpsecMalformed);
    return;
  }
  uint8_t* e = scratch.data() + ipsec::EspLayer::kScratchHeadroom;
  ipsec::Opened o;
  const ipsec::OpenError err = ipsec::esp_open(esp_->engine(), *sa->keys, seq, sa->esn, esp, e, o);
  uint8_t outer[60];
  whole.copy_out(0, {outer, hl});
  esp_deliver(ifc, *sa, seq, err, o, e, {outer, hl}, meta, now);
}

void Stack::hold_esp_rx(Interface& ifc, const PacketView& whole, size_t hl, const PacketView& esp,
                        ipsec::InboundSa& sa, ipsec::EspSeq seq, const RxMeta& meta, Instant now) {
  ipsec::CbcRxBurst& b = esp_->cbc_rx_burst();
  const size_t i = b.n;
  ipsec::CbcRxBurst::Held& h = b.held[i];
  uint8_t* e = b.slot(i) + ipsec::CbcRxBurst::kHeadroom;
  const auto n = static_cast<uint32_t>(esp.size());
  esp.copy_out(0, {e, n});
  const ipsec::OpenError err = ipsec::esp_open_cbc_prepare(*sa.keys, seq, sa.esn, e, n, b.ops[i],
                                                           h.received.data(), b.tags[i].data());
  if (err != ipsec::OpenError::none) {
    esp_deliver(ifc, sa, seq, err, {}, e, {}, meta, now);
    return;
  }
  whole.copy_out(0, {h.outer.data(), hl});
  h.outer_len = static_cast<uint8_t>(hl);
  h.sa = &sa;
  h.seq = seq;
  h.iface = ifc.index;
  h.meta = meta;
  if (++b.n == ipsec::CbcRxBurst::kMax) flush_esp_rx(now);
}

void Stack::flush_esp_rx(Instant now) {
  ipsec::CbcRxBurst& b = esp_->cbc_rx_burst();
  const size_t n = b.n;
  ipsec::cbc_hmac_open(esp_->engine(), std::span(b.ops.data(), n));
  // What a delivered packet leads to (ESP inside ESP) is opened on its own, not held in the
  // slots still being delivered.
  b.delivering = true;
  for (size_t i = 0; i < n; ++i) {
    const ipsec::CbcRxBurst::Held& h = b.held[i];
    ipsec::Opened o;
    const ipsec::OpenError err = ipsec::esp_open_cbc_finish(b.ops[i], h.received.data(), o);
    esp_deliver(*ifaces_[h.iface], *h.sa, h.seq, err, o, b.slot(i) + ipsec::CbcRxBurst::kHeadroom,
                {h.outer.data(), h.outer_len}, h.meta, now);
  }
  b.delivering = false;
  b.n = 0;
}

void Stack::esp_deliver(Interface& ifc, ipsec::InboundSa& sa, ipsec::EspSeq seq,
                        ipsec::OpenError err, const ipsec::Opened& o, uint8_t* e,
                        std::span<const uint8_t> outer, const RxMeta& meta, Instant now) {
  auto sa_error = [&](ipsec::SaError why) {
    sa.counters.add(why);
    drops_.add(DropReason::kIpsecSaError);
  };
  switch (err) {
    case ipsec::OpenError::none:
      break;
    case ipsec::OpenError::malformed:
      drops_.add(DropReason::kIpsecMalformed);
      return;
    case ipsec::OpenError::auth_failed:
      sa_error(ipsec::SaError::auth_failed);
      return;
    case ipsec::OpenError::bad_padding:
      sa_error(ipsec::SaError::bad_padding);
      return;
  }
  // Only a verified packet moves the window; a duplicate within the burst fails here.
  if (auto v = sa.replay.accept(seq); v != ipsec::ReplayVerdict::ok) {
    sa_error(v == ipsec::ReplayVerdict::replayed ? ipsec::SaError::replayed
                                                 : ipsec::SaError::outside_window);
    return;
  }
  ++sa.counters.packets;
  sa.counters.bytes += o.payload_len;
  uint8_t* payload = e + o.payload_off;
  std::span<const uint8_t> inner;
  if (sa.mode == ipsec::Mode::tunnel) {
    if (o.next_header != wire::kIpProtoIpv4) {
      drops_.add(DropReason::kIpsecMalformed);
      return;
    }
    inner = {payload, o.payload_len};
  } else {
    // Transport: the outer header again, now carrying the decrypted protocol and length.
    const size_t hl = outer.size();
    uint8_t* hdr = payload - hl;
    std::memcpy(hdr, outer.data(), hl);
    hdr[9] = o.next_header;
    store_be16(hdr + 2, static_cast<uint16_t>(hl + o.payload_len));
    store_be16(hdr + 6, load_be16(hdr + 6) & 0x4000);  // reassembled: no fragment fields
    store_be16(hdr + 10, 0);
    store_be16(hdr + 10, internet_checksum({hdr, hl}));
    inner = {hdr, hl + o.payload_len};
  }
  RxMeta m = meta;
  m.ip = RxMeta::Cksum::kUnknown;
  m.l4 = RxMeta::Cksum::kUnknown;
  rx_sa_ = &sa;
  ipv4_input(ifc, PacketView(inner), m, false, now);
  rx_sa_ = nullptr;
}

bool Stack::send_datagram_esp(ipsec::OutboundSa& sa, Ipv4Addr src, Ipv4Addr dst, uint8_t proto,
                              std::span<const uint8_t> head, std::span<const uint8_t> body,
                              Instant now) {
  uint16_t lp = 0, rp = 0;
  read_ports(proto, head, lp, rp);
  const ipsec::Decision d = esp_->lookup(dst, proto, lp, rp);
  if (d.action == ipsec::PolicyAction::bypass) {
    return send_fragments(src, dst, proto, head, body, false, now);
  }
  if (d.action != ipsec::PolicyAction::protect || d.outbound != &sa) {
    drops_.add(DropReason::kIpsecPolicy);
    return false;
  }
  const bool tunnel = sa.mode == ipsec::Mode::tunnel;
  auto r = route(tunnel ? sa.remote : dst);
  if (!r) {
    drops_.add(DropReason::kIpv4NoRoute);
    return false;
  }
  const Ipv4Addr inner_src = src.is_any() ? ifaces_[r->iface]->cfg.address.addr : src;
  const auto l4_len = static_cast<uint32_t>(head.size() + body.size());
  const uint32_t inner_len = l4_len + (tunnel ? kL3 : 0);
  std::span<uint8_t> scratch = esp_->tx_scratch();
  if (kL3 + ipsec::esp_len(sa.cipher, inner_len) > 65535) {
    drops_.add(DropReason::kFrameTooLong);
    return false;
  }
  ipsec::EspSeq seq;
  switch (sa.seq.take(seq)) {
    case ipsec::OutboundSequence::Take::ok:
      break;
    case ipsec::OutboundSequence::Take::wait:
      drops_.add(DropReason::kIpsecSeqUnreserved);
      return false;
    case ipsec::OutboundSequence::Take::exhausted:
      sa.counters.add(ipsec::SaError::sequence_exhausted);
      drops_.add(DropReason::kIpsecSaError);
      return false;
  }
  uint8_t* p = scratch.data() + ipsec::esp_head_len(sa.cipher);
  if (tunnel) {
    wire::Ipv4Repr ip;
    ip.src = inner_src;
    ip.dst = dst;
    ip.protocol = proto;
    ip.ttl = cfg_.default_ttl;
    ip.ident = next_ip_id_++;
    ip.dont_fragment = false;
    ip.payload_len = static_cast<uint16_t>(l4_len);
    wire::emit_ipv4(p, ip);
    p += kL3;
  }
  std::memcpy(p, head.data(), head.size());
  std::memcpy(p + head.size(), body.data(), body.size());
  const uint32_t n =
      ipsec::esp_seal(esp_->engine(), *sa.keys, sa.spi, seq, sa.esn,
                      tunnel ? wire::kIpProtoIpv4 : proto, scratch.data(), inner_len);
  ++sa.counters.packets;
  sa.counters.bytes += inner_len;
  // RFC 4303 3.3.4: the ESP packet is what gets fragmented.
  return send_fragments(tunnel ? sa.local : inner_src, tunnel ? sa.remote : dst, wire::kIpProtoEsp,
                        {}, {scratch.data(), n}, false, now);
}

}  // namespace ws
