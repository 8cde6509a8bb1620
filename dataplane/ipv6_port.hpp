// IPv6 on a port: the stack's view of it (addresses, link-local, router), and the
// Ethernet multicast groups the port must deliver for it.
#pragma once

#include <cstdint>
#include <string>

#include "control/config/config.hpp"
#include "stack/iface/stack.hpp"

namespace ws::dp {

// The link-local address a port with `mac` forms (ipv6.link_local).
Ipv6Addr link_local_of(const config::Config& cfg, const MacAddr& mac);

// The IPv6 part of a port's InterfaceConfig (nothing when the port runs no IPv6).
void ipv6_interface(const config::Config& cfg, const config::PortConfig& pc, const MacAddr& mac,
                    InterfaceConfig& ic);

// The stack settings that concern IPv6 for one core: duplicate addresses are logged.
StackConfig ipv6_stack_config(uint32_t core);

// Lets the port deliver the all-nodes group and the solicited-node groups of the port's
// addresses (33:33:…, RFC 2464 section 7): an exact multicast filter where the driver
// has one, all-multicast where it has not. Returns a note for the start log ("" when the
// port runs no IPv6).
std::string ipv6_multicast_filter(const config::Config& cfg, const config::PortConfig& pc,
                                  uint16_t port_id, const MacAddr& mac);

}  // namespace ws::dp
