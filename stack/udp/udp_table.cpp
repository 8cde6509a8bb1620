#include "stack/udp/udp_table.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "stack/core/checksum.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/udp.hpp"

namespace ws {

bool UdpSocket::send_to(const Endpoint& dst, std::span<const uint8_t> payload, Instant now) {
  return table_.send(port_, dst, payload, now);
}

size_t UdpSocket::send_burst(const Endpoint& dst,
                             std::span<const std::span<const uint8_t>> payloads, Instant now) {
  return table_.send_burst(port_, dst, payloads, now);
}

UdpTable::UdpTable(L4Output& out, DropCounters& drops, FamilyCount& udp_out_counter)
    : out_(out), drops_(drops), udp_out_(udp_out_counter) {}

UdpSocket* UdpTable::bind(uint16_t port, UdpSocket::Handler handler) {
  return add(port, std::move(handler), nullptr);
}

UdpSocket* UdpTable::bind(uint16_t port, UdpSocket::BurstHandler handler) {
  return add(port, nullptr, std::move(handler));
}

UdpSocket* UdpTable::add(uint16_t port, UdpSocket::Handler handler, UdpSocket::BurstHandler burst) {
  if (port == 0 || index_[port] != 0 || sockets_.size() >= 32767) return nullptr;
  sockets_.push_back(
      std::unique_ptr<UdpSocket>(new UdpSocket(*this, port, std::move(handler), std::move(burst))));
  index_[port] = static_cast<int16_t>(sockets_.size());
  return sockets_.back().get();
}

void UdpTable::unbind(uint16_t port) {
  int16_t i = index_[port];
  if (i == 0) return;
  UdpSocket* s = sockets_[static_cast<size_t>(i - 1)].get();
  if (burst_sock_ == s) {  // what waits for it goes nowhere: the socket is closed
    burst_sock_ = nullptr;
    burst_n_ = 0;
  }
  sockets_[static_cast<size_t>(i - 1)].reset();
  index_[port] = 0;
}

bool UdpTable::deliver(const UdpDatagram& d, Instant now, bool held) {
  int16_t i = index_[d.dst.port];
  if (i == 0) return false;
  UdpSocket& s = *sockets_[static_cast<size_t>(i - 1)];
  if (!family_admits(s.family_, d.src.addr)) return false;
  if (!s.burst_) {
    s.handler_(s, d, now);
    return true;
  }
  if (burst_n_ != 0 && (burst_sock_ != &s || burst_n_ == kBurst || !held)) flush_burst(now);
  if (!held) {
    s.burst_(s, std::span<const UdpDatagram>(&d, 1), now);
    return true;
  }
  burst_sock_ = &s;
  burst_[burst_n_++] = d;
  return true;
}

void UdpTable::flush_burst(Instant now) {
  if (burst_n_ == 0) return;
  UdpSocket* s = burst_sock_;
  const size_t n = burst_n_;
  burst_n_ = 0;
  burst_sock_ = nullptr;
  s->burst_(*s, std::span<const UdpDatagram>(burst_.data(), n), now);
}

bool UdpTable::restrict_family(uint16_t port, AddrFamily f) {
  int16_t i = index_[port];
  if (i == 0) return false;
  sockets_[static_cast<size_t>(i - 1)]->family_ = f;
  return true;
}

bool UdpTable::send(uint16_t src_port, const Endpoint& dst, std::span<const uint8_t> payload,
                    Instant now) {
  // The UDP length field bounds a datagram to 65535 bytes with its header.
  if (payload.size() > 65535 - wire::UdpView::kHeaderLen) {
    drops_.add(DropReason::kFrameTooLong);
    return false;
  }
  auto l4_len = static_cast<uint32_t>(wire::UdpView::kHeaderLen + payload.size());
  const uint32_t mtu = out_.mtu_to(dst.addr);  // a route lookup: once
  if (ip_header_len(dst.addr) + l4_len > mtu && mtu != 0) {
    return send_fragmented(src_port, dst, payload, now);
  }
  L4Frame f;
  // Gathered: the payload goes straight into the buffers that carry it (a chain
  // for a jumbo datagram over small mbufs), summed on the way when the checksum
  // is computed in software.
  constexpr uint32_t kHl = wire::UdpView::kHeaderLen;
  if (!out_.begin_gather(Ipv4Addr::any(), dst.addr, wire::kIpProtoUdp, kHl, l4_len, f)) {
    return false;
  }
  wire::emit_udp(f.l4.data(), src_port, dst.port, static_cast<uint16_t>(payload.size()));
  if (!payload.empty()) {
    TxWriter w = f.writer(kHl);
    w.write(payload);  // begin_gather sized the frame for exactly this payload
    f.payload_written(kHl, w);
  }
  // Datagrams are sent with DF clear, like a kernel socket without PMTU discovery.
  f.dont_fragment = false;
  out_.commit(f, now);
  ++udp_out_[family_index(dst.addr)];
  return true;
}

size_t UdpTable::send_burst(uint16_t src_port, const Endpoint& dst,
                            std::span<const std::span<const uint8_t>> payloads, Instant now) {
  constexpr size_t kHl = wire::UdpView::kHeaderLen;
  std::array<std::array<uint8_t, kHl>, kBurst> hdrs{};
  std::array<L4Datagram, kBurst> d;
  size_t sent = 0;
  while (sent < payloads.size()) {
    const size_t n = std::min(kBurst, payloads.size() - sent);
    bool fits = true;
    for (size_t i = 0; i < n; ++i) {
      const auto& p = payloads[sent + i];
      fits = fits && p.size() <= 65535 - kHl;
      wire::emit_udp(hdrs[i].data(), src_port, dst.port, static_cast<uint16_t>(p.size()));
      d[i] = L4Datagram{hdrs[i], p};
    }
    const std::optional<size_t> r =
        fits ? out_.send_udp_burst(dst.addr, std::span(d).first(n), now) : std::nullopt;
    if (!r.has_value()) {
      // The burst path does not apply: one by one, stopping at the first failure.
      for (size_t i = 0; i < n; ++i) {
        if (!send(src_port, dst, payloads[sent], now)) return sent;
        ++sent;
      }
      continue;
    }
    const size_t took = *r;  // engaged: checked above (value() would bring a throw path)
    sent += took;
    udp_out_[family_index(dst.addr)] += took;
    if (took < n) break;
  }
  return sent;
}

bool UdpTable::send_fragmented(uint16_t src_port, const Endpoint& dst,
                               std::span<const uint8_t> payload, Instant now) {
  // Larger than the MTU: the IP layer cuts it into fragments (RFC 791 3.2, RFC 8200 4.5), so the
  // checksum covers the whole datagram and is computed here, in software (RFC 768).
  const IpAddr src = out_.source_for(dst.addr);
  auto l4_len = static_cast<uint16_t>(wire::UdpView::kHeaderLen + payload.size());
  std::array<uint8_t, wire::UdpView::kHeaderLen> hdr{};
  wire::emit_udp(hdr.data(), src_port, dst.port, static_cast<uint16_t>(payload.size()));
  store_be16(hdr.data() + wire::UdpView::kChecksumOff, 0);
  uint32_t sum = pseudo_sum(src, dst.addr, wire::kIpProtoUdp, l4_len);
  sum = csum_partial(hdr, sum);
  uint16_t c = csum_fold(csum_partial(payload, sum));
  if (c == 0) c = 0xffff;  // RFC 768: zero means "no checksum"
  store_be16(hdr.data() + wire::UdpView::kChecksumOff, c);
  // Datagrams are sent with DF clear, like a kernel socket without PMTU discovery.
  if (!out_.send_datagram(src, dst.addr, wire::kIpProtoUdp, hdr, payload, false, now)) return false;
  ++udp_out_[family_index(dst.addr)];
  return true;
}

}  // namespace ws
