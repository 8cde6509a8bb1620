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

uint32_t rss_hash_ipv4(std::span<const uint8_t> key, Ipv4Addr src, Ipv4Addr dst, uint16_t src_port,
                       uint16_t dst_port, bool with_ports) {
  std::array<uint8_t, 12> in{};
  auto put32 = [&](size_t at, uint32_t v) {
    in[at] = static_cast<uint8_t>(v >> 24);
    in[at + 1] = static_cast<uint8_t>(v >> 16);
    in[at + 2] = static_cast<uint8_t>(v >> 8);
    in[at + 3] = static_cast<uint8_t>(v);
  };
  put32(0, src.v);
  put32(4, dst.v);
  in[8] = static_cast<uint8_t>(src_port >> 8);
  in[9] = static_cast<uint8_t>(src_port);
  in[10] = static_cast<uint8_t>(dst_port >> 8);
  in[11] = static_cast<uint8_t>(dst_port);
  return toeplitz_hash(key, std::span<const uint8_t>(in.data(), with_ports ? 12 : 8));
}

const RssRoute* RssPortSelector::route(Ipv4Addr remote) const {
  for (const RssRoute& r : routes_) {
    if (r.subnet.contains(remote)) return &r;
  }
  for (const RssRoute& r : routes_) {
    if (r.has_gateway) return &r;
  }
  return routes_.empty() ? nullptr : &routes_.front();
}

bool RssPortSelector::operator()(uint16_t local_port, Endpoint remote) const {
  const RssRoute* r = route(remote.addr);
  if (r == nullptr) return core_ == 0;
  if (r->software)
    return owner_.of_tcp(r->subnet.addr, local_port, remote.addr, remote.port) == core_;
  const uint16_t q = r->rss.enabled && r->rx_queues > 1
                         ? r->rss.queue_for_tcp(r->subnet.addr, local_port, remote)
                         : 0;
  return q % cores_ == core_;
}

bool RssPortSelector::active() const {
  for (const RssRoute& r : routes_) {
    if (r.software || (r.rss.enabled && r.rx_queues > 1)) return true;
  }
  return false;
}

}  // namespace ws
