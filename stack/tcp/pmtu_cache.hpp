// Path MTU per destination (RFC 1191 section 5: a host should remember the PMTU per
// destination), so that a new connection starts from what an earlier one learnt
// instead of meeting the same black hole again. Fixed size and direct-mapped by
// address: no allocation; a collision forgets the older destination, which is then
// learnt again. Entries expire after tcp.pmtu_recovery_s, as a lowered MTU does.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "stack/core/addr.hpp"
#include "stack/core/time.hpp"
#include "stack/tcp/pmtu.hpp"

namespace ws::tcp {

class PmtuCache {
 public:
  static constexpr size_t kSlots = 256;
  struct Entry {
    IpAddr addr;
    uint32_t mss = 0;          // path MTU - 40 known to work
    uint32_t search_high = 0;  // largest not known to fail (a search may be under way)
    PmtuLoweredBy by = PmtuLoweredBy::kNone;
    Instant expires;
    bool used = false;
  };

  // What a connection to `addr` uses now; an MSS of `link_mss` or more forgets `addr`.
  void record(IpAddr addr, uint32_t mss, uint32_t search_high, uint32_t link_mss, PmtuLoweredBy by,
              Instant expires) {
    Entry& e = slots_[slot(addr)];
    if (mss >= link_mss) {
      if (e.used && e.addr == addr) e.used = false;
      return;
    }
    e = Entry{addr, mss, search_high, by, expires, true};
  }
  // The live entry for `addr`, or nullptr.
  const Entry* find(IpAddr addr, Instant now) const {
    const Entry& e = slots_[slot(addr)];
    return e.used && e.addr == addr && now < e.expires ? &e : nullptr;
  }

 private:
  static size_t slot(IpAddr a) {
    // An IPv6 destination's prefix and interface identifier fold into 32 bits first.
    const uint64_t w = a.lo ^ a.hi;
    const auto k = a.is_v4() ? a.v4().v : static_cast<uint32_t>(w ^ (w >> 32));
    uint32_t x = k * 0x9e3779b1u;  // Fibonacci hashing: the high bits mix every byte
    return static_cast<size_t>(x >> 24) % kSlots;
  }

  std::array<Entry, kSlots> slots_{};
};

}  // namespace ws::tcp
