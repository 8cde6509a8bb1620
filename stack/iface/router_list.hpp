// The default router list of one interface (RFC 4861 5.2, 6.3.4): routers learned from
// their advertisements, each with the Router Lifetime it announced. Bounded; time is a
// parameter, and the caller asks which router to use.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "stack/core/addr.hpp"
#include "stack/core/time.hpp"

namespace ws {

class DefaultRouters {
 public:
  static constexpr size_t kMaxRouters = 4;

  enum class Change : uint8_t { kAdded, kRefreshed, kWithdrawn, kIgnored, kFull };
  // An advertisement from `router` announcing `lifetime` (RFC 4861 6.3.4): a new router is
  // added, a known one's expiry moves, and a lifetime of zero removes it at once.
  Change advertised(const Ipv6Addr& router, Duration lifetime, Instant now);

  // The router off-link traffic goes through: the first live one that `reachable` does not
  // call unreachable (RFC 4861 6.3.6), else the first live one.
  template <class Reachable>
  std::optional<Ipv6Addr> select(Instant now, Reachable&& reachable) const {
    const Entry* fallback = nullptr;
    for (const auto& e : entries_) {
      if (!e.live || e.expires <= now) continue;
      if (reachable(e.addr)) return e.addr;
      if (fallback == nullptr) fallback = &e;
    }
    if (fallback != nullptr) return fallback->addr;
    return std::nullopt;
  }

  // Forgets routers whose lifetime ran out; returns the next expiry.
  Instant poll(Instant now);
  size_t size() const;
  // The preferred router, for the status screen (no reachability known: the first live).
  std::optional<Ipv6Addr> first(Instant now) const {
    return select(now, [](const Ipv6Addr&) { return true; });
  }

 private:
  struct Entry {
    Ipv6Addr addr;
    Instant expires;
    bool live = false;
  };
  std::array<Entry, kMaxRouters> entries_{};
};

}  // namespace ws
