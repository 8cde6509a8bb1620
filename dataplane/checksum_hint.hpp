// Explaining TCP/UDP checksum failures on af_packet ports. A veth whose peer has TX
// checksum offload on hands locally sent frames over with the checksum unfinished
// (CHECKSUM_PARTIAL): the kernel marks them TP_STATUS_CSUMNOTREADY in the packet ring,
// but DPDK 22.11's af_packet PMD copies the frame and drops that status (it sets no RX
// checksum flags at all), so the stack sees a wrong checksum and drops the datagram.
// The data plane cannot tell those frames from corrupt ones, so it names the likely
// cause and the fix instead (docs/troubleshooting.md).
#pragma once

#include <string>

#include "dataplane/link_peer.hpp"

namespace ws::dp {

// The explanation that follows "TCP/UDP checksum failures; ": the likely cause and the
// command that fixes it, naming the peer interface when known. `driver` and `peer`
// describe `iface`. At most 190 characters for names of at most 15 (IFNAMSIZ - 1).
std::string checksum_hint(const std::string& iface, const std::string& driver,
                          const LinkPeer& peer);

}  // namespace ws::dp
