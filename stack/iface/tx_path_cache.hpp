// What IPv4 output learns about a unicast destination and keeps for its next frames: the
// route, the next hop's MAC address and the headers laid out (Ipv4Template). A connection
// sends every segment to one destination, so from its second frame on a hit skips the
// route lookup, the ARP lookup and the header layout: about 100 instructions a frame
// (callgrind, tests/bench/http_client_cost).
//
// A path is used only while it answers exactly what those lookups would: routes change
// only when an interface is added (the cache is then emptied), and a next hop's MAC only
// through its ARP entry, whose cache counts every change (ArpCache::version). The entry's
// refresh point (ArpCache::quiet_until) ends a path's use, so that lookup_for_send() still
// sends the refresh requests of an entry in use.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "stack/core/addr.hpp"
#include "stack/core/time.hpp"
#include "stack/iface/ipv4_template.hpp"

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
};

// Direct-mapped by destination and protocol: a miss costs one slot's compare and the lookups
// that happen anyway; a server talking to more peers than slots loses only the saving.
class TxPathCache {
 public:
  static constexpr size_t kSlots = 64;

  // The path to `dst` for `proto` from `src` (any: the interface's address), if one is kept.
  TxPath* find(Ipv4Addr dst, uint8_t proto, Ipv4Addr src) {
    TxPath& p = slots_[slot(dst, proto)];
    if (p.dst != dst || p.proto != proto || dst.is_any()) return nullptr;
    if (!src.is_any() && src != p.src) return nullptr;
    return &p;
  }
  // The slot a path to `dst` for `proto` goes in (replacing what it held).
  TxPath& place(Ipv4Addr dst, uint8_t proto) { return slots_[slot(dst, proto)]; }
  void clear() { slots_.fill(TxPath{}); }

 private:
  static size_t slot(Ipv4Addr dst, uint8_t proto) {
    // Fibonacci hashing: the low bits of neighbouring addresses land in different slots.
    const uint32_t k = (dst.v ^ (uint32_t{proto} << 24)) * 0x9e3779b9u;
    return k >> (32 - 6);
  }
  static_assert(kSlots == 64, "slot() takes the top 6 bits");

  std::array<TxPath, kSlots> slots_{};
};

}  // namespace ws
