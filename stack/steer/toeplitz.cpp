#include "stack/steer/toeplitz.hpp"

namespace ws {

uint32_t toeplitz_hash(std::span<const uint8_t> key, std::span<const uint8_t> input) {
  auto key_byte = [&](size_t i) -> uint32_t { return i < key.size() ? key[i] : 0u; };
  // `window` holds key bits [bit, bit + 32) for the input bit being looked at; the next
  // key byte is shifted in as each input byte is consumed.
  uint32_t window = (key_byte(0) << 24) | (key_byte(1) << 16) | (key_byte(2) << 8) | key_byte(3);
  uint32_t hash = 0;
  for (size_t i = 0; i < input.size(); ++i) {
    const uint32_t next = key_byte(i + 4);
    for (int b = 7; b >= 0; --b) {
      if ((input[i] >> b) & 1u) hash ^= window;
      window = (window << 1) | ((next >> b) & 1u);
    }
  }
  return hash;
}

uint32_t rss_hash(std::span<const uint8_t> key, IpAddr src, IpAddr dst, uint16_t src_port,
                  uint16_t dst_port, bool with_ports) {
  std::array<uint8_t, 36> in{};
  size_t n = src.to_bytes(in.data());
  n += dst.to_bytes(in.data() + n);
  const size_t addrs = n;
  in[n++] = static_cast<uint8_t>(src_port >> 8);
  in[n++] = static_cast<uint8_t>(src_port);
  in[n++] = static_cast<uint8_t>(dst_port >> 8);
  in[n++] = static_cast<uint8_t>(dst_port);
  return toeplitz_hash(key, std::span<const uint8_t>(in.data(), with_ports ? n : addrs));
}

const RssRoute* RssPortSelector::route(IpAddr remote) const {
  for (const RssRoute& r : routes_) {
    if (remote.is_v4() && r.subnet.contains(remote.v4())) return &r;
    if (!remote.is_v4()) {
      for (const Ipv6Cidr& c : r.addresses6) {
        if (c.contains(remote.v6())) return &r;
      }
    }
  }
  for (const RssRoute& r : routes_) {
    if (remote.is_v4() ? r.has_gateway : r.has_gateway6) return &r;
  }
  return routes_.empty() ? nullptr : &routes_.front();
}

IpAddr port_address_for(const Ipv4Cidr& v4, std::span<const Ipv6Cidr> v6, IpAddr remote) {
  if (remote.is_v4()) return v4.addr;
  for (const Ipv6Cidr& c : v6) {
    if (c.contains(remote.v6())) return c.addr;
  }
  return v6.empty() ? IpAddr(Ipv6Addr{}) : IpAddr(v6.front().addr);
}

bool RssPortSelector::operator()(uint16_t local_port, Endpoint remote) const {
  const RssRoute* r = route(remote.addr);
  if (r == nullptr) return core_ == 0;
  const IpAddr local = port_address_for(r->subnet, r->addresses6, remote.addr);
  if (r->software) return owner_.of_tcp(local, local_port, remote.addr, remote.port) == core_;
  const uint16_t q =
      r->rss.enabled && r->rx_queues > 1 ? r->rss.queue_for_tcp(local, local_port, remote) : 0;
  return q % cores_ == core_;
}

bool RssPortSelector::active() const {
  for (const RssRoute& r : routes_) {
    if (r.software || (r.rss.enabled && r.rx_queues > 1)) return true;
  }
  return false;
}

}  // namespace ws
