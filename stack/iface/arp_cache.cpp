#include "stack/iface/arp_cache.hpp"

#include <algorithm>

namespace ws {

ArpCache::ArpCache(ArpConfig cfg) : cfg_(cfg) {
  entries_.resize(cfg_.max_entries);
  for (auto& e : entries_) e.pending.reserve(cfg_.max_pending_per_entry);
}

// A small table scanned linearly: a core talks to few next hops (its subnet's
// peers and a gateway), and the scan touches contiguous memory.
// Slots are taken lowest-first, so only [0, high_water_) is ever scanned.
ArpCache::Entry* ArpCache::find(Ipv4Addr ip) {
  for (size_t i = 0; i < high_water_; ++i) {
    Entry& e = entries_[i];
    if (e.state != State::kFree && e.ip == ip) return &e;
  }
  return nullptr;
}

const ArpCache::Entry* ArpCache::find(Ipv4Addr ip) const {
  for (size_t i = 0; i < high_water_; ++i) {
    const Entry& e = entries_[i];
    if (e.state != State::kFree && e.ip == ip) return &e;
  }
  return nullptr;
}

std::optional<MacAddr> ArpCache::lookup(Ipv4Addr ip, Instant now) const {
  const Entry* e = find(ip);
  if (e == nullptr || e->state != State::kReachable || now >= e->deadline) return std::nullopt;
  return e->mac;
}

ArpCache::Entry* ArpCache::allocate(Ipv4Addr ip, Instant now, ArpActions& act) {
  Entry* victim = nullptr;
  for (auto& e : entries_) {
    if (e.state == State::kFree) {
      victim = &e;
      break;
    }
    // Otherwise evict the reachable entry closest to expiry; never an incomplete
    // one, whose queued frames are still waiting.
    if (e.state == State::kReachable && (victim == nullptr || e.deadline < victim->deadline)) {
      victim = &e;
    }
  }
  if (victim == nullptr) return nullptr;
  high_water_ = std::max(high_water_, static_cast<size_t>(victim - entries_.data()) + 1);
  if (victim->state != State::kFree) release(*victim, act);
  victim->ip = ip;
  victim->state = State::kIncomplete;
  victim->retries = 0;
  victim->deadline = now;
  ++live_;
  return victim;
}

void ArpCache::release(Entry& e, ArpActions& act) {
  for (auto& f : e.pending) act.drop_pending(f);
  pending_total_ -= static_cast<uint32_t>(e.pending.size());
  e.pending.clear();
  e.state = State::kFree;
  --live_;
}

void ArpCache::learn(Ipv4Addr ip, const MacAddr& mac, bool create, Instant now, ArpActions& act) {
  Entry* e = find(ip);
  if (e == nullptr) {
    if (!create) return;
    e = allocate(ip, now, act);
    if (e == nullptr) return;
  }
  e->mac = mac;
  e->state = State::kReachable;
  e->retries = 0;
  e->deadline = now + cfg_.reachable_time;
  for (auto& f : e->pending) act.send_resolved(f, mac);
  pending_total_ -= static_cast<uint32_t>(e->pending.size());
  e->pending.clear();
}

ArpCache::Queued ArpCache::enqueue(Ipv4Addr ip, TxBuf& frame, Instant now, ArpActions& act) {
  Entry* e = find(ip);
  if (e != nullptr && e->state == State::kReachable) {
    // Expired but still present: resolve again, keeping the entry's slot.
    e->state = State::kIncomplete;
    e->retries = 0;
    e->deadline = now;
  }
  if (e == nullptr) {
    e = allocate(ip, now, act);
    if (e == nullptr) return Queued::kQueueFull;
  }
  if (e->pending.size() >= cfg_.max_pending_per_entry || pending_total_ >= cfg_.max_pending_total) {
    return Queued::kQueueFull;
  }
  e->pending.push_back(frame);
  ++pending_total_;
  if (e->retries == 0 && e->deadline <= now) {
    act.send_request(ip);
    e->retries = 1;
    e->deadline = now + cfg_.retry_interval;
  }
  return Queued::kQueued;
}

Instant ArpCache::poll(Instant now, ArpActions& act) {
  Instant next = Instant::never();
  for (size_t i = 0; i < high_water_; ++i) {
    Entry& e = entries_[i];
    if (e.state == State::kFree) continue;
    if (e.deadline <= now) {
      if (e.state == State::kReachable) {
        release(e, act);  // aged out (RFC 1122 2.3.2.1: entries must time out)
        continue;
      }
      if (e.retries >= cfg_.max_retries) {
        ++resolve_failures_;
        release(e, act);
        continue;
      }
      act.send_request(e.ip);
      ++e.retries;
      e.deadline = now + cfg_.retry_interval;
    }
    next = earliest(next, e.deadline);
  }
  return next;
}

void ArpCache::clear(ArpActions& act) {
  for (size_t i = 0; i < high_water_; ++i) {
    if (entries_[i].state != State::kFree) release(entries_[i], act);
  }
  high_water_ = 0;
}

}  // namespace ws
