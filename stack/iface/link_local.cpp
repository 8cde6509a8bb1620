#include "stack/iface/link_local.hpp"

#include "stack/core/siphash.hpp"

namespace ws {

namespace {

constexpr Ipv6Addr kLinkLocalPrefix{{0xfe, 0x80, 0, 0, 0, 0, 0, 0}};

// RFC 5453: the all-zero identifier (subnet-router anycast) and the reserved
// subnet anycast range fdff:ffff:ffff:ff80..ffff.
bool reserved_iid(const Ipv6Addr& a) {
  bool zero = true;
  for (size_t i = 8; i < 16; ++i) zero = zero && a.b[i] == 0;
  if (zero) return true;
  const bool anycast_top = a.b[8] == 0xfd && a.b[9] == 0xff && a.b[10] == 0xff && a.b[11] == 0xff &&
                           a.b[12] == 0xff && a.b[13] == 0xff && a.b[14] == 0xff && a.b[15] >= 0x80;
  return anycast_top;
}

}  // namespace

Ipv6Addr eui64_link_local(const MacAddr& mac) {
  Ipv6Addr a = kLinkLocalPrefix;
  a.b[8] = mac.b[0] ^ 0x02;
  a.b[9] = mac.b[1];
  a.b[10] = mac.b[2];
  a.b[11] = 0xff;
  a.b[12] = 0xfe;
  a.b[13] = mac.b[3];
  a.b[14] = mac.b[4];
  a.b[15] = mac.b[5];
  return a;
}

Ipv6Addr stable_link_local(const MacAddr& mac, const std::array<uint8_t, 16>& secret,
                           uint8_t dad_counter) {
  for (unsigned counter = dad_counter;; ++counter) {
    // Prefix (8 bytes), Net_Iface (6), DAD_Counter (1).
    uint8_t msg[15];
    for (size_t i = 0; i < 8; ++i) msg[i] = kLinkLocalPrefix.b[i];
    mac.to_bytes(msg + 8);
    msg[14] = static_cast<uint8_t>(counter);
    const uint64_t iid = siphash24(secret, msg, sizeof msg);
    Ipv6Addr a = kLinkLocalPrefix;
    for (size_t i = 0; i < 8; ++i) a.b[8 + i] = static_cast<uint8_t>(iid >> (56 - 8 * i));
    if (!reserved_iid(a)) return a;
  }
}

}  // namespace ws
