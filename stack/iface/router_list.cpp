#include "stack/iface/router_list.hpp"

namespace ws {

DefaultRouters::Change DefaultRouters::advertised(const Ipv6Addr& router, Duration lifetime,
                                                  Instant now) {
  Entry* free_slot = nullptr;
  for (auto& e : entries_) {
    if (e.live && e.expires <= now) e.live = false;  // expired: the slot is free again
    if (e.live && e.addr == router) {
      if (lifetime == Duration::zero()) {
        e.live = false;  // RFC 4861 6.3.4: a Router Lifetime of zero times it out at once
        return Change::kWithdrawn;
      }
      e.expires = now + lifetime;
      return Change::kRefreshed;
    }
    if (!e.live && free_slot == nullptr) free_slot = &e;
  }
  if (lifetime == Duration::zero()) return Change::kIgnored;  // not a default router
  if (free_slot == nullptr) return Change::kFull;
  *free_slot = Entry{router, now + lifetime, true};
  return Change::kAdded;
}

Instant DefaultRouters::poll(Instant now) {
  Instant next = Instant::never();
  for (auto& e : entries_) {
    if (!e.live) continue;
    if (e.expires <= now) {
      e.live = false;
      continue;
    }
    next = earliest(next, e.expires);
  }
  return next;
}

size_t DefaultRouters::size() const {
  size_t n = 0;
  for (const auto& e : entries_) n += e.live ? 1 : 0;
  return n;
}

}  // namespace ws
