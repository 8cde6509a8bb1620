// Which core owns a flow when the port cannot steer flows itself (software RSS).
//
// A port whose hash cannot be read or programmed (net_tap's kernel queue selection,
// memif, which has none, a single queue shared by several cores) delivers a flow's
// packets to whichever queue it likes. Every core then computes the same owner for a
// received frame and hands frames it does not own to the owner (dataplane/steering.hpp).
// The owner is a function of the flow's tuple alone, known to every core, and symmetric
// in the two endpoints, so that:
// - a core that opens a connection picks a local port whose tuple it owns
//   (RssPortSelector), and
// - two wirespeed data planes with the same core count agree on the owner: the sender's
//   TX queue (its core index) is the receiver's RX queue of the owning core, so memif
//   pairs deliver every packet to its owner without a hand-over.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stack/core/addr.hpp"

namespace ws {

// A hash of the two endpoints of a flow, the same whichever end is first.
// IPv4 and IPv6 endpoints alike (an IPv6 address is folded to 64 bits first).
uint32_t flow_hash(IpAddr a, uint16_t a_port, IpAddr b, uint16_t b_port);

class FlowOwner {
 public:
  // Frames every core must see (ARP replies: each core keeps its own ARP cache).
  static constexpr uint32_t kEvery = 0xffffffffu;

  // `host_ports`: TCP ports whose connections are owned by the pair of addresses alone, so
  // that all connections between two hosts on such a port meet on one core (iperf3's
  // control and data connections belong to one test).
  FlowOwner(uint32_t cores, std::vector<uint16_t> host_ports);
  FlowOwner() : FlowOwner(1, {}) {}

  uint32_t cores() const { return cores_; }
  // Pins all traffic to and from `range` (any ports, and ESP) to `core`: the peers of an
  // IPsec SA, so that one core holds the SA's sequence numbers and its replay window (RFC
  // 4303 3.3.3, 3.4.3) and the flows it protects meet their ESP there. The first pin that
  // covers either end of a flow decides.
  void pin(Ipv4Cidr range, uint32_t core);
  // The core a pin gives the traffic between `a` and `b`, or kNone.
  static constexpr uint32_t kNone = 0xfffffffeu;
  // Pins are IPv4 ranges (IPsec runs over IPv4): IPv6 traffic is never pinned.
  uint32_t pinned(IpAddr a, IpAddr b) const;
  // The owner of a TCP connection between two endpoints (either family).
  uint32_t of_tcp(IpAddr a, uint16_t a_port, IpAddr b, uint16_t b_port) const;
  // The owner of UDP and other traffic between two hosts: by addresses only, so that
  // the fragments of a datagram (only the first carries the ports) meet on one core.
  uint32_t of_hosts(IpAddr a, IpAddr b) const;
  // The owner of a received Ethernet frame (its first `frame.size()` bytes, which must
  // hold the headers): a core index, kEvery, or `here` for frames any core may handle
  // (ICMP echo, ARP requests, frames too short or not IPv4, which the stack counts).
  uint32_t of_frame(std::span<const uint8_t> frame, uint32_t here) const;

 private:
  uint32_t of_ip(std::span<const uint8_t> ip, uint32_t here, bool quoted) const;
  uint32_t of_ipv6(std::span<const uint8_t> ip, uint32_t here, bool quoted) const;
  bool host_port(uint16_t p) const;
  uint32_t cores_;
  std::vector<uint16_t> host_ports_;  // sorted
  struct Pin {
    Ipv4Cidr range;
    uint32_t core = 0;
  };
  std::vector<Pin> pins_;
};

}  // namespace ws
