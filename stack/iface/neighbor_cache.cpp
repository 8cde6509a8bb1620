#include "stack/iface/neighbor_cache.hpp"

#include <algorithm>

namespace ws {

NeighborCache::NeighborCache(NeighborConfig cfg)
    : cfg_(cfg),
      table_(std::max<uint32_t>(cfg.max_entries, 1), cfg.max_pending_per_entry,
             cfg.max_pending_total) {}

std::optional<NeighborCache::State> NeighborCache::state_of(const Ipv6Addr& ip) const {
  const Entry* e = table_.find(ip);
  if (e == nullptr) return std::nullopt;
  return e->state;
}

Instant NeighborCache::quiet_until(const Ipv6Addr& ip, Instant now) const {
  const Entry* e = table_.find(ip);
  // resolve() moves a REACHABLE entry once its time is over, and any STALE one; DELAY and
  // PROBE change only by poll() at their deadline (RFC 4861 7.3.3), which counts a version.
  if (e == nullptr || now >= e->deadline) return now;
  const bool quiet = e->state == State::kReachable || e->state == State::kDelay ||
                     e->state == State::kProbe || e->state == State::kPermanent;
  return quiet ? e->deadline : now;
}

void NeighborCache::set(Entry& e, State s, Instant deadline) {
  ++version_;
  e.state = s;
  e.deadline = deadline;
  e.probes = 0;
}

std::optional<MacAddr> NeighborCache::resolve(const Ipv6Addr& ip, Instant now) {
  Entry* e = table_.find(ip);
  if (e == nullptr || e->state == State::kIncomplete) return std::nullopt;
  if (e->state == State::kReachable && now >= e->deadline) {
    set(*e, State::kStale, now + cfg_.stale_lifetime);
  }
  if (e->state == State::kStale) set(*e, State::kDelay, now + cfg_.delay_first_probe);
  return e->mac;
}

NeighborCache::Queued NeighborCache::enqueue(const Ipv6Addr& ip, TxBuf& frame, Instant now,
                                             NeighborActions& act) {
  ++version_;
  Entry* e = table_.find(ip);
  if (e == nullptr) {
    e = table_.allocate(ip, now, act);
    if (e == nullptr) return Queued::kQueueFull;
  }
  if (e->state != State::kIncomplete) {
    // Resolved meanwhile (resolve() would have answered): send at once.
    act.send_resolved(frame, e->mac);
    return Queued::kQueued;
  }
  if (!table_.hold(*e, frame)) return Queued::kQueueFull;
  if (e->probes == 0) {
    act.send_solicit(ip, std::nullopt);
    e->probes = 1;
    e->deadline = now + cfg_.retrans_timer;
  }
  return Queued::kQueued;
}

bool NeighborCache::advertised(const Ipv6Addr& ip, const std::optional<MacAddr>& tll,
                               bool solicited, bool override_flag, Instant now,
                               NeighborActions& act) {
  ++version_;
  Entry* e = table_.find(ip);
  if (e == nullptr) return false;
  if (e->state == State::kPermanent) return true;  // configured: the link cannot move it
  const Instant reachable = now + cfg_.reachable_time;
  if (e->state == State::kIncomplete) {
    if (!tll) return true;  // 7.2.5: without the option it says nothing we can use
    e->mac = *tll;
    set(*e, solicited ? State::kReachable : State::kStale,
        solicited ? reachable : now + cfg_.stale_lifetime);
    table_.flush(*e, act);
    return true;
  }
  const bool changed = tll && *tll != e->mac;
  if (!override_flag && changed) {
    // 7.2.5: a different address without Override does not replace ours; a REACHABLE
    // entry is only demoted.
    if (e->state == State::kReachable) set(*e, State::kStale, now + cfg_.stale_lifetime);
    return true;
  }
  if (tll) e->mac = *tll;
  if (solicited) {
    set(*e, State::kReachable, reachable);
  } else if (changed) {
    set(*e, State::kStale, now + cfg_.stale_lifetime);
  }
  return true;
}

void NeighborCache::solicited_by(const Ipv6Addr& ip, const MacAddr& sll, Instant now,
                                 NeighborActions& act) {
  ++version_;
  Entry* e = table_.find(ip);
  if (e == nullptr) {
    e = table_.allocate(ip, now, act);
    if (e == nullptr) return;
    e->mac = sll;
    set(*e, State::kStale, now + cfg_.stale_lifetime);
    return;
  }
  if (e->state == State::kPermanent) return;
  if (e->state == State::kIncomplete) {
    e->mac = sll;
    set(*e, State::kStale, now + cfg_.stale_lifetime);
    table_.flush(*e, act);
    return;
  }
  if (e->mac != sll) {
    e->mac = sll;
    set(*e, State::kStale, now + cfg_.stale_lifetime);
  }
}

void NeighborCache::confirm(const Ipv6Addr& ip, Instant now) {
  Entry* e = table_.find(ip);
  if (e != nullptr && e->state != State::kIncomplete && e->state != State::kPermanent) {
    set(*e, State::kReachable, now + cfg_.reachable_time);
  }
}

bool NeighborCache::expire(Entry& e, Instant now, NeighborActions& act) {
  switch (e.state) {
    case State::kReachable:
      set(e, State::kStale, now + cfg_.stale_lifetime);
      return true;
    case State::kStale:
      table_.release(e, act);  // unused for stale_lifetime: aged out
      return false;
    case State::kDelay:
      // 7.3.3: no confirmation within DELAY_FIRST_PROBE_TIME: probe by unicast.
      set(e, State::kProbe, now + cfg_.retrans_timer);
      e.probes = 1;
      act.send_solicit(e.ip, e.mac);
      return true;
    case State::kIncomplete:
    case State::kProbe: {
      const bool multicast = e.state == State::kIncomplete;
      const uint32_t max = multicast ? cfg_.max_multicast_solicit : cfg_.max_unicast_solicit;
      if (e.probes >= max) {
        table_.fail(e, act);
        return false;
      }
      act.send_solicit(e.ip, multicast ? std::nullopt : std::optional<MacAddr>(e.mac));
      ++e.probes;
      e.deadline = now + cfg_.retrans_timer;
      return true;
    }
    case State::kPermanent:  // its deadline is never: not reached
    case State::kFree:
      break;
  }
  return true;
}

Instant NeighborCache::poll(Instant now, NeighborActions& act) {
  ++version_;
  return table_.sweep(now, [&](Entry& e) { return expire(e, now, act); });
}

bool NeighborCache::add_static(const Ipv6Addr& ip, const MacAddr& mac, NeighborActions& act) {
  ++version_;
  return table_.make_permanent(ip, mac, act);
}

void NeighborCache::clear(NeighborActions& act) {
  ++version_;
  table_.clear(act);
}

}  // namespace ws
