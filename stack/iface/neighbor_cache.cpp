#include "stack/iface/neighbor_cache.hpp"

#include <algorithm>

namespace ws {

NeighborCache::NeighborCache(NeighborConfig cfg) : cfg_(cfg) {
  entries_.resize(std::max<uint32_t>(cfg_.max_entries, 1));
  for (auto& e : entries_) e.pending.reserve(cfg_.max_pending_per_entry);
}

// Scanned linearly, lowest slots first, as the ARP cache: a core has few neighbours.
NeighborCache::Entry* NeighborCache::find(const Ipv6Addr& ip) {
  for (size_t i = 0; i < high_water_; ++i) {
    Entry& e = entries_[i];
    if (e.state != State::kFree && e.ip == ip) return &e;
  }
  return nullptr;
}

std::optional<NeighborCache::State> NeighborCache::state_of(const Ipv6Addr& ip) const {
  for (size_t i = 0; i < high_water_; ++i) {
    const Entry& e = entries_[i];
    if (e.state != State::kFree && e.ip == ip) return e.state;
  }
  return std::nullopt;
}

NeighborCache::Entry* NeighborCache::allocate(const Ipv6Addr& ip, Instant now,
                                              NeighborActions& act) {
  Entry* victim = nullptr;
  for (auto& e : entries_) {
    if (e.state == State::kFree) {
      victim = &e;
      break;
    }
    // Evict the resolved entry whose timer runs out first; never an INCOMPLETE one,
    // whose queued frames still wait (RFC 4861 7.3.2 leaves the policy open).
    if (e.state != State::kIncomplete && (victim == nullptr || e.deadline < victim->deadline)) {
      victim = &e;
    }
  }
  if (victim == nullptr) return nullptr;
  high_water_ = std::max(high_water_, static_cast<size_t>(victim - entries_.data()) + 1);
  if (victim->state != State::kFree) release(*victim, act);
  victim->ip = ip;
  victim->probes = 0;
  victim->state = State::kIncomplete;
  victim->deadline = now;
  ++live_;
  return victim;
}

void NeighborCache::release(Entry& e, NeighborActions& act) {
  for (auto& f : e.pending) act.drop_pending(f);
  pending_total_ -= static_cast<uint32_t>(e.pending.size());
  e.pending.clear();
  e.state = State::kFree;
  --live_;
}

void NeighborCache::set(Entry& e, State s, Instant deadline) {
  e.state = s;
  e.deadline = deadline;
  e.probes = 0;
}

void NeighborCache::flush_pending(Entry& e, NeighborActions& act) {
  for (auto& f : e.pending) act.send_resolved(f, e.mac);
  pending_total_ -= static_cast<uint32_t>(e.pending.size());
  e.pending.clear();
}

std::optional<MacAddr> NeighborCache::resolve(const Ipv6Addr& ip, Instant now) {
  Entry* e = find(ip);
  if (e == nullptr || e->state == State::kIncomplete) return std::nullopt;
  if (e->state == State::kReachable && now >= e->deadline) {
    set(*e, State::kStale, now + cfg_.stale_lifetime);
  }
  if (e->state == State::kStale) set(*e, State::kDelay, now + cfg_.delay_first_probe);
  return e->mac;
}

NeighborCache::Queued NeighborCache::enqueue(const Ipv6Addr& ip, TxBuf& frame, Instant now,
                                             NeighborActions& act) {
  Entry* e = find(ip);
  if (e == nullptr) {
    e = allocate(ip, now, act);
    if (e == nullptr) return Queued::kQueueFull;
  }
  if (e->state != State::kIncomplete) {
    // Resolved meanwhile (resolve() would have answered): send at once.
    act.send_resolved(frame, e->mac);
    return Queued::kQueued;
  }
  if (e->pending.size() >= cfg_.max_pending_per_entry || pending_total_ >= cfg_.max_pending_total) {
    return Queued::kQueueFull;
  }
  e->pending.push_back(frame);
  ++pending_total_;
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
  Entry* e = find(ip);
  if (e == nullptr) return false;
  const Instant reachable = now + cfg_.reachable_time;
  if (e->state == State::kIncomplete) {
    if (!tll) return true;  // 7.2.5: without the option it says nothing we can use
    e->mac = *tll;
    set(*e, solicited ? State::kReachable : State::kStale,
        solicited ? reachable : now + cfg_.stale_lifetime);
    flush_pending(*e, act);
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
  Entry* e = find(ip);
  if (e == nullptr) {
    e = allocate(ip, now, act);
    if (e == nullptr) return;
    e->mac = sll;
    set(*e, State::kStale, now + cfg_.stale_lifetime);
    return;
  }
  if (e->state == State::kIncomplete) {
    e->mac = sll;
    set(*e, State::kStale, now + cfg_.stale_lifetime);
    flush_pending(*e, act);
    return;
  }
  if (e->mac != sll) {
    e->mac = sll;
    set(*e, State::kStale, now + cfg_.stale_lifetime);
  }
}

void NeighborCache::confirm(const Ipv6Addr& ip, Instant now) {
  Entry* e = find(ip);
  if (e != nullptr && e->state != State::kIncomplete) {
    set(*e, State::kReachable, now + cfg_.reachable_time);
  }
}

Instant NeighborCache::poll(Instant now, NeighborActions& act) {
  Instant next = Instant::never();
  for (size_t i = 0; i < high_water_; ++i) {
    Entry& e = entries_[i];
    if (e.state == State::kFree) continue;
    if (e.deadline <= now) {
      switch (e.state) {
        case State::kReachable:
          set(e, State::kStale, now + cfg_.stale_lifetime);
          break;
        case State::kStale:
          release(e, act);  // unused for stale_lifetime: aged out
          continue;
        case State::kDelay:
          // 7.3.3: no confirmation within DELAY_FIRST_PROBE_TIME: probe by unicast.
          set(e, State::kProbe, now + cfg_.retrans_timer);
          e.probes = 1;
          act.send_solicit(e.ip, e.mac);
          break;
        case State::kIncomplete:
        case State::kProbe: {
          const bool multicast = e.state == State::kIncomplete;
          const uint32_t max = multicast ? cfg_.max_multicast_solicit : cfg_.max_unicast_solicit;
          if (e.probes >= max) {
            ++resolve_failures_;
            release(e, act);
            continue;
          }
          act.send_solicit(e.ip, multicast ? std::nullopt : std::optional<MacAddr>(e.mac));
          ++e.probes;
          e.deadline = now + cfg_.retrans_timer;
          break;
        }
        case State::kFree:
          break;
      }
    }
    next = earliest(next, e.deadline);
  }
  return next;
}

void NeighborCache::clear(NeighborActions& act) {
  for (size_t i = 0; i < high_water_; ++i) {
    if (entries_[i].state != State::kFree) release(entries_[i], act);
  }
  high_water_ = 0;
}

}  // namespace ws
