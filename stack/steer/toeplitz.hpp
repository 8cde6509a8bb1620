// The Toeplitz hash that NICs use for receive-side scaling (RSS), and the mapping from a
// hash through the redirection table (RETA) to an RX queue.
//
// Why the stack computes it: a connection we open must pick a local port whose returning
// packets the NIC steers to the opening core's queue (shared nothing,
// no TIME_WAIT collisions between cores). The NIC hashes the received packet's
// (source address, destination address, source port, destination port), i.e. the
// remote end first, in network byte order, with the port's secret key; the low bits of
// the hash index the RETA. Definition and test vectors: Microsoft, "Verifying the RSS
// Hash Calculation" (NDIS RSS specification).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "stack/core/addr.hpp"
#include "stack/steer/flow_owner.hpp"

namespace ws {

// 40 bytes is the key length of the RSS specification and of most NICs (enough for an
// IPv6 4-tuple: 36 bytes of input need 36 + 4 bytes of key).
inline constexpr size_t kRssKeyMax = 52;

// Toeplitz hash of `input` under `key`: for every set bit of the input (most significant
// first), XOR in the 32-bit window of the key that starts at that bit. The key must be at
// least input.size() + 4 bytes long; missing key bytes count as zero.
uint32_t toeplitz_hash(std::span<const uint8_t> key, std::span<const uint8_t> input);

// The hash a NIC computes for a received TCP or UDP packet (4-tuple) or for any IP
// packet (addresses only, `with_ports` false): over source and destination address (4
// bytes each for IPv4, 16 for IPv6), then source and destination port.
uint32_t rss_hash(std::span<const uint8_t> key, IpAddr src, IpAddr dst, uint16_t src_port,
                  uint16_t dst_port, bool with_ports = true);

// What a port's RSS does, read from the device at start: its key, its redirection
// table, and whether L4 ports enter the hash of TCP packets.
struct RssTable {
  bool enabled = false;
  bool tcp_ports = true;  // RTE_ETH_RSS_NONFRAG_IPV4_TCP in the hash functions
  std::vector<uint8_t> key;
  std::vector<uint16_t> reta;  // queue for each hash & (reta.size() - 1)

  // The RX queue a received packet with this hash goes to (0 when RSS is off).
  uint16_t queue_for(uint32_t hash) const {
    if (!enabled || reta.empty()) return 0;
    return reta[hash % reta.size()];
  }
  // The RX queue of the packets a peer at `remote` sends to `local`:`local_port`.
  uint16_t queue_for_tcp(IpAddr local, uint16_t local_port, Endpoint remote) const {
    return queue_for(rss_hash(key, remote.addr, local, remote.port, local_port, tcp_ports));
  }
};

// Whether a local port suits a connection that core `core` of `cores` opens: the replies
// must reach this core. On a port whose RSS could be read, that means an RX queue this
// core polls (queue % cores == core, as the data plane deals queues); on a port steered
// in software (`software`), a tuple this core owns by FlowOwner. The port towards the
// remote is the one whose subnet (IPv4) or prefix (IPv6) holds it, else the first with a
// gateway of the remote's family, else the first.
// A port with neither delivers everything to its queue 0.
struct RssRoute {
  Ipv4Cidr subnet;
  bool has_gateway = false;
  uint16_t rx_queues = 1;
  RssTable rss;
  bool software = false;
  // IPv6: the port's global addresses (its source towards a remote: the one whose
  // prefix holds it, else the first) and whether it has a default router.
  std::vector<Ipv6Cidr> addresses6;
  bool has_gateway6 = false;
};

// A port's address towards `remote`: its IPv4 address, or the IPv6 one whose prefix
// holds `remote`, else its first (:: when it has none).
IpAddr port_address_for(const Ipv4Cidr& v4, std::span<const Ipv6Cidr> v6, IpAddr remote);

class RssPortSelector {
 public:
  RssPortSelector(std::vector<RssRoute> routes, uint32_t core, uint32_t cores, FlowOwner owner = {})
      : routes_(std::move(routes)),
        core_(core),
        cores_(cores == 0 ? 1 : cores),
        owner_(std::move(owner)) {}
  bool operator()(uint16_t local_port, Endpoint remote) const;
  // Some port spreads flows by a table that could be read, so selection matters.
  bool active() const;

 private:
  const RssRoute* route(IpAddr remote) const;
  std::vector<RssRoute> routes_;
  uint32_t core_;
  uint32_t cores_;
  FlowOwner owner_;
};

}  // namespace ws
