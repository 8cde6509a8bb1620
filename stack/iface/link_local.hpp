// A port's IPv6 link-local address (fe80::/64 and a 64-bit interface identifier).
#pragma once

#include <array>
#include <cstdint>

#include "stack/core/addr.hpp"

namespace ws {

// Modified EUI-64 from the MAC (RFC 4291 appendix A): ff:fe in the middle, the
// universal/local bit inverted.
Ipv6Addr eui64_link_local(const MacAddr& mac);

// RFC 7217 section 5: the identifier is F(Prefix, Net_Iface, Network_ID, DAD_Counter,
// secret_key) with F a keyed PRF (SipHash-2-4 here, 64 bits out). Net_Iface is the MAC;
// Network_ID is not used. Stable for a MAC and secret; `dad_counter` gives the next
// candidate after a duplicate (RFC 7217 section 6). Reserved identifiers (RFC 5453) are
// skipped by moving to the next counter.
Ipv6Addr stable_link_local(const MacAddr& mac, const std::array<uint8_t, 16>& secret,
                           uint8_t dad_counter = 0);

}  // namespace ws
