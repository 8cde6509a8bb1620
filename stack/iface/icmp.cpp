// ICMP (RFC 792, RFC 1122 section 3.2.2): echo replies, errors we generate, and
// errors we receive for our own datagrams.
#include "stack/wire/icmp.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "stack/core/checksum.hpp"
#include "stack/iface/interface.hpp"
#include "stack/wire/esp.hpp"
#include "stack/wire/ipv4.hpp"

namespace ws {

void Stack::icmp_input(Interface& ifc, Ipv4Addr src, Ipv4Addr dst, const PacketView& msg,
                       Instant now) {
  (void)ifc;
  ++counters_.icmp_in;
  uint8_t hdr_buf[wire::IcmpView::kHeaderLen];
  auto hdr = msg.pullup(std::min(msg.size(), wire::IcmpView::kHeaderLen), hdr_buf,
                        counters_.rx_header_pullups);
  auto icmp = wire::IcmpView::parse(hdr);
  if (!icmp) {
    drops_.add(DropReason::kIcmpTruncated);
    return;
  }
  // The checksum covers the whole message (RFC 792), summed over the segments.
  if (csum_fold(msg.csum()) != 0) {
    drops_.add(DropReason::kIcmpBadChecksum);
    return;
  }
  switch (icmp->type()) {
    case wire::kIcmpEchoRequest:
      icmp_echo(src, dst, hdr, msg, now);
      return;
    case wire::kIcmpDestUnreachable:
    case wire::kIcmpTimeExceeded: {
      ++counters_.icmp_unreachable_in;
      // The quote (an IPv4 header and at least 8 bytes, RFC 792) is small: read
      // it as one span, copied only if the message is chained.
      auto quoted = linearize(msg.tail(wire::IcmpView::kHeaderLen));
      auto inner = wire::Ipv4View::parse(quoted);
      if (inner && inner->protocol() == wire::kIpProtoEsp && esp_ != nullptr) {
        esp_frag_needed(*icmp, *inner, quoted);
        return;
      }
      if (!inner || inner->protocol() != wire::kIpProtoTcp || tcp_ == nullptr) return;
      tcp_->icmp_error(icmp->type(), icmp->code(), icmp->next_hop_mtu(), quoted, now);
      return;
    }
    case wire::kIcmpEchoReply:
      return;  // we send no echo requests of our own yet; harmless
    default:
      drops_.add(DropReason::kIcmpUnsupportedType);
      return;
  }
}

// RFC 1122 3.2.2.6: echo the identifier, sequence and data back. Requests to a broadcast
// address may be ignored; we answer only unicast ones.
void Stack::icmp_echo(Ipv4Addr src, Ipv4Addr dst, std::span<const uint8_t> hdr,
                      const PacketView& msg, Instant now) {
  bool bcast = false;
  is_local(dst, bcast);
  if (bcast) {
    drops_.add(DropReason::kIcmpUnsupportedType);
    return;
  }
  if (wire::Ipv4View::kMinHeaderLen + msg.size() > mtu_to(src) && mtu_to(src) != 0) {
    // A large (typically reassembled) request: the reply goes out in fragments
    // (RFC 791 3.2), its checksum computed here over the whole message.
    std::array<uint8_t, wire::IcmpView::kHeaderLen> reply_hdr{};
    std::memcpy(reply_hdr.data(), hdr.data(), reply_hdr.size());
    reply_hdr[0] = wire::kIcmpEchoReply;
    reply_hdr[1] = 0;
    store_be16(reply_hdr.data() + 2, 0);
    auto body = linearize(msg.tail(wire::IcmpView::kHeaderLen));
    store_be16(reply_hdr.data() + 2, csum_fold(csum_partial(body, csum_partial(reply_hdr))));
    if (send_datagram(dst, src, wire::kIpProtoIcmp, reply_hdr, body, false, now)) {
      ++counters_.icmp_echo_replies_out;
    }
    return;
  }
  // The reply is the request with a new header: the header goes into the first
  // buffer, the data straight from the request's segments into the reply's
  // (a chain at jumbo sizes), summed on the way for the checksum.
  constexpr uint32_t kHl = wire::IcmpView::kHeaderLen;
  L4Frame f;
  if (!begin_gather(dst, src, wire::kIpProtoIcmp, kHl, static_cast<uint32_t>(msg.size()), f)) {
    return;
  }
  TxWriter w = f.writer(kHl);
  bool whole = true;
  msg.tail(kHl).for_each([&](std::span<const uint8_t> piece) { whole = whole && w.write(piece); });
  uint8_t* h = f.l4.data();
  h[wire::IcmpView::kTypeOff] = wire::kIcmpEchoReply;
  h[wire::IcmpView::kCodeOff] = 0;
  store_be16(h + wire::IcmpView::kChecksumOff, 0);
  std::memcpy(h + 4, hdr.data() + 4, 4);  // identifier and sequence number
  // The data starts at an even offset (8), so its sum adds as it is. Where the
  // writer did not sum (it sums when begin_gather asks for a software L4
  // checksum), sum the request's data, which the reply copies.
  uint32_t body_sum = w.summing() ? w.sum() : msg.tail(kHl).csum();
  store_be16(h + wire::IcmpView::kChecksumOff, csum_fold(csum_partial({h, kHl}, body_sum)));
  if (!whole) {  // cannot happen: begin_gather sized the frame for all of it
    ifaces_[f.iface]->io.release(f.buf);
    drops_.add(DropReason::kFrameTooLong);
    return;
  }
  f.dont_fragment = false;
  commit(f, now);
  ++counters_.icmp_echo_replies_out;
}

void Stack::send_icmp_error(uint8_t type, uint8_t code, uint32_t rest, const PacketView& offending,
                            Instant now) {
  // Quote as much of the datagram as fits in 576 bytes (RFC 1812 4.3.2.3): the
  // quote is all this reads, pulled up when the datagram is chained.
  constexpr size_t kMaxQuote = 576 - 20 - wire::IcmpView::kHeaderLen;
  uint8_t quote_buf[kMaxQuote];
  const size_t quote = std::min(offending.size(), kMaxQuote);
  auto quoted = offending.pullup(quote, quote_buf, counters_.rx_header_pullups);
  auto ip = wire::Ipv4View::parse(quoted);
  if (!ip) return;
  // RFC 1122 3.2.2: never about an ICMP error, a non-first fragment, or a
  // datagram from a non-unicast source.
  if (ip->frag_offset() != 0) return;
  if (ip->src().is_any()) return;  // 0.0.0.0 names no host to tell
  if (ip->protocol() == wire::kIpProtoIcmp && quoted.size() > ip->header_len()) {
    uint8_t t = quoted[ip->header_len()];
    if (t != wire::kIcmpEchoRequest && t != wire::kIcmpEchoReply) return;
  }
  if (!icmp_errors_.take(now)) {
    drops_.add(DropReason::kIcmpRateLimited);
    return;
  }
  L4Frame f;
  if (!begin(ip->dst(), ip->src(), wire::kIpProtoIcmp,
             static_cast<uint32_t>(wire::IcmpView::kHeaderLen + quote), f)) {
    return;
  }
  std::memcpy(f.l4.data() + wire::IcmpView::kHeaderLen, quoted.data(), quote);
  wire::emit_icmp(f.l4.data(), type, code, rest, quote);
  f.dont_fragment = false;
  commit(f, now);
  ++counters_.icmp_errors_out;
}

}  // namespace ws
