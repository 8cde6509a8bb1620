#include "stack/apps/iperf3_udp.hpp"

#include "stack/core/bytes.hpp"

namespace ws::iperf3 {

bool parse_udp_header(std::span<const uint8_t> d, bool counters64, UdpHeader& out) {
  if (d.size() < udp_header_size(counters64)) return false;
  out.sec = load_be32(d.data());
  out.usec = load_be32(d.data() + 4);
  if (counters64) {
    out.seq = static_cast<uint64_t>(load_be32(d.data() + 8)) << 32 | load_be32(d.data() + 12);
  } else {
    out.seq = load_be32(d.data() + 8);
  }
  return true;
}

void write_udp_header(std::span<uint8_t> d, bool counters64, Instant now, uint64_t seq) {
  const uint64_t us = now.ns() / 1000;
  store_be32(d.data(), static_cast<uint32_t>(us / 1000000));
  store_be32(d.data() + 4, static_cast<uint32_t>(us % 1000000));
  if (counters64) {
    store_be32(d.data() + 8, static_cast<uint32_t>(seq >> 32));
    store_be32(d.data() + 12, static_cast<uint32_t>(seq));
  } else {
    store_be32(d.data() + 8, static_cast<uint32_t>(seq));
  }
}

void UdpReceiveStats::on_datagram(const UdpHeader& h, size_t n, Instant arrival) {
  const bool first = datagrams == 0;
  ++datagrams;
  bytes += n;
  if (h.seq > highest) {
    lost += h.seq - highest - 1;
    highest = h.seq;
  } else {
    ++out_of_order;
    // It fills a gap counted as lost earlier (duplicates are assumed away, as in iperf3).
    if (lost > 0) --lost;
  }
  const double sent = static_cast<double>(h.sec) + static_cast<double>(h.usec) * 1e-6;
  const double transit = static_cast<double>(arrival.ns()) * 1e-9 - sent;
  if (first) prev_transit_ = transit;
  double d = transit - prev_transit_;
  if (d < 0) d = -d;
  prev_transit_ = transit;
  jitter_s += (d - jitter_s) / 16.0;
}

uint64_t Pacer::allowance(Instant now, uint64_t sent) const {
  if (rate_bps_ == 0) return UINT64_MAX;
  if (now <= start_) return 0;
  // bits = rate * ns / 1e9, computed without overflowing for rates up to ~100 Gbit/s
  // and tests up to a day.
  const double allowed = static_cast<double>(rate_bps_) * (now - start_).secs() / 8.0;
  const double left = allowed - static_cast<double>(sent);
  return left > 0 ? static_cast<uint64_t>(left) : 0;
}

}  // namespace ws::iperf3
