// What output learns about a unicast destination and keeps for its next frames: the
// interface, the source address, the next hop's MAC address and the headers laid out. A
// connection sends every segment to one destination, so from its second frame on a hit
// skips the route lookup, the neighbour lookup and the header layout: about 100
// instructions a frame over IPv4 and 250 over IPv6 (callgrind, tests/bench/http_client_cost
// and rx_path_bench).
//
// A path is used only while it answers exactly what those lookups would.
// - IPv4 (TxPath): routes change only when an interface is added (the cache is then
//   emptied), and a next hop's MAC only through its ARP entry, whose cache counts every
//   change (ArpCache::version). The entry's refresh point (ArpCache::quiet_until) ends a
//   path's use, so that lookup_for_send() still sends the refresh requests of an entry in
//   use.
// - IPv6 (TxPath6): the interface and the on-link test follow from configuration alone; the
//   source address and the default router change with DAD and router advertisements (the
//   cache is then emptied), and the next hop's MAC through its neighbour entry
//   (NeighborCache::version). A path holds until that entry's own timer or the next IPv6
//   timer, whichever is first, and never for a STALE entry (RFC 4861 7.3.3: sending to one
//   moves it to DELAY, so such a frame takes the full path).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "stack/core/addr.hpp"
#include "stack/core/time.hpp"
#include "stack/iface/ipv4_template.hpp"
#include "stack/iface/ipv6_template.hpp"

namespace ws {

struct TxPath {
  Ipv4Addr dst;  // any: an empty slot
  Ipv4Addr src;
  Ipv4Addr next_hop;
  uint8_t proto = 0;
  bool dont_fragment = true;
  uint16_t iface = 0;
  uint64_t arp_version = 0;  // the interface's ArpCache::version() when laid out
  Instant quiet_until;       // the ARP entry's next refresh or expiry
  Ipv4Template hdr;

  static bool empty(Ipv4Addr a) { return a.is_any(); }
  static uint32_t key(Ipv4Addr a) { return a.v; }
};

struct TxPath6 {
  Ipv6Addr dst;  // unspecified: an empty slot
  Ipv6Addr src;
  uint8_t proto = 0;
  uint16_t iface = 0;
  uint64_t nd_version = 0;  // the interface's NeighborCache::version() when laid out
  Instant quiet_until;      // NeighborCache::quiet_until, or the next IPv6 timer
  Ipv6Template hdr;

  static bool empty(const Ipv6Addr& a) { return a.is_unspecified(); }
  static uint32_t key(const Ipv6Addr& a) {
    const uint64_t x = a.half(0) ^ a.half(1);
    return static_cast<uint32_t>(x ^ (x >> 32));
  }
};

// Direct-mapped by destination and protocol: a miss costs one slot's compare and the lookups
// that happen anyway; a server talking to more peers than slots loses only the saving.
template <class Path>
class PathCache {
 public:
  static constexpr size_t kSlots = 64;
  using Addr = decltype(Path::dst);

  // The path to `dst` for `proto` from `src` (empty: the interface's address), if one is kept.
  Path* find(const Addr& dst, uint8_t proto, const Addr& src) {
    Path& p = slots_[slot(dst, proto)];
    if (!(p.dst == dst) || p.proto != proto || Path::empty(dst)) return nullptr;
    if (!Path::empty(src) && !(src == p.src)) return nullptr;
    return &p;
  }
  // The slot a path to `dst` for `proto` goes in (replacing what it held).
  Path& place(const Addr& dst, uint8_t proto) { return slots_[slot(dst, proto)]; }
  void clear() { slots_.fill(Path{}); }

 private:
  static size_t slot(const Addr& dst, uint8_t proto) {
    // Fibonacci hashing: the low bits of neighbouring addresses land in different slots.
    const uint32_t k = (Path::key(dst) ^ (uint32_t{proto} << 24)) * 0x9e3779b9u;
    return k >> (32 - 6);
  }
  static_assert(kSlots == 64, "slot() takes the top 6 bits");

  std::array<Path, kSlots> slots_{};
};

using TxPathCache = PathCache<TxPath>;
using TxPathCache6 = PathCache<TxPath6>;

}  // namespace ws
