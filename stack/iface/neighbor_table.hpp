// What the ARP cache (IPv4, RFC 826) and the IPv6 neighbour cache (RFC 4861) have in
// common: a fixed table of next hops, each with a bounded queue of frames waiting for
// its link address, and the live / high-water / failure counters. The caches keep their
// own state machines; the table only knows that an entry is free, INCOMPLETE (resolving,
// frames may wait), PERMANENT (configured, never aged, replaced or evicted) or resolved
// (any other state, with a link address).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "stack/core/addr.hpp"
#include "stack/core/packet.hpp"
#include "stack/core/time.hpp"

namespace ws {

// Where the frames that waited go: both caches' action interfaces extend this.
class PendingSink {
 public:
  virtual ~PendingSink() = default;
  // A queued frame whose next hop resolved: fill the destination MAC and send.
  virtual void send_resolved(TxBuf& frame, const MacAddr& dst) = 0;
  // A queued frame that cannot be sent (resolution failed, entry evicted, cache flushed).
  virtual void drop_pending(TxBuf& frame) = 0;
};

// `State` is the cache's state enum; it must have kFree, kIncomplete and kPermanent.
template <typename Addr, typename State>
class NeighborTable {
 public:
  struct Entry {
    Addr ip;
    MacAddr mac;
    State state = State::kFree;
    Instant deadline;     // the cache's timer for the entry's state
    uint32_t probes = 0;  // requests / solicitations sent in this state
    std::vector<TxBuf> pending;
  };

  NeighborTable(uint32_t max_entries, uint32_t max_pending_per_entry, uint32_t max_pending_total)
      : entries_(max_entries),
        max_pending_per_entry_(max_pending_per_entry),
        max_pending_total_(max_pending_total) {
    for (auto& e : entries_) e.pending.reserve(max_pending_per_entry);
  }
  NeighborTable(const NeighborTable&) = delete;
  NeighborTable& operator=(const NeighborTable&) = delete;

  // Scanned linearly: a core talks to few next hops (its subnet's peers and a gateway),
  // and the scan touches contiguous memory. Slots are taken lowest-first, so only
  // [0, high_water_) is ever scanned.
  Entry* find(const Addr& ip) {
    for (size_t i = 0; i < high_water_; ++i) {
      Entry& e = entries_[i];
      if (e.state != State::kFree && e.ip == ip) return &e;
    }
    return nullptr;
  }
  const Entry* find(const Addr& ip) const { return const_cast<NeighborTable*>(this)->find(ip); }

  // A new INCOMPLETE entry for ip with no probe sent: a free slot, else the resolved entry
  // whose timer runs out first. Never an INCOMPLETE one, whose queued frames still wait
  // (RFC 1122 2.3.2.2 and RFC 4861 7.3.2 leave the policy open), nor a PERMANENT one.
  // nullptr when every entry is INCOMPLETE or PERMANENT.
  Entry* allocate(const Addr& ip, Instant now, PendingSink& act) {
    Entry* victim = nullptr;
    for (auto& e : entries_) {
      if (e.state == State::kFree) {
        victim = &e;
        break;
      }
      if (e.state != State::kIncomplete && e.state != State::kPermanent &&
          (victim == nullptr || e.deadline < victim->deadline)) {
        victim = &e;
      }
    }
    if (victim == nullptr) return nullptr;
    high_water_ = std::max(high_water_, static_cast<size_t>(victim - entries_.data()) + 1);
    if (victim->state != State::kFree) release(*victim, act);
    victim->ip = ip;
    victim->state = State::kIncomplete;
    victim->probes = 0;
    victim->deadline = now;
    ++live_;
    return victim;
  }

  // A configured neighbour (a static entry, as `ip neigh ... nud permanent`): resolved
  // from the start, never aged, never replaced by what the link says, never evicted;
  // frames that waited on it go out. False when the table has no slot left for it.
  bool make_permanent(const Addr& ip, const MacAddr& mac, PendingSink& act) {
    Entry* e = find(ip);
    if (e == nullptr) e = allocate(ip, Instant{}, act);
    if (e == nullptr) return false;
    e->mac = mac;
    e->state = State::kPermanent;
    e->deadline = Instant::never();
    e->probes = 0;
    flush(*e, act);
    return true;
  }

  // Frees e, dropping the frames that waited on it.
  void release(Entry& e, PendingSink& act) {
    for (auto& f : e.pending) act.drop_pending(f);
    pending_total_ -= static_cast<uint32_t>(e.pending.size());
    e.pending.clear();
    e.state = State::kFree;
    --live_;
  }
  // Resolution gave up on e: counted, then freed.
  void fail(Entry& e, PendingSink& act) {
    ++failures_;
    release(e, act);
  }

  // Queues frame on e; false when e's queue or the whole table's is full.
  bool hold(Entry& e, TxBuf& frame) {
    if (e.pending.size() >= max_pending_per_entry_ || pending_total_ >= max_pending_total_) {
      return false;
    }
    e.pending.push_back(frame);
    ++pending_total_;
    return true;
  }
  // Sends the frames that waited on e to e.mac, in the order they came.
  void flush(Entry& e, PendingSink& act) {
    for (auto& f : e.pending) act.send_resolved(f, e.mac);
    pending_total_ -= static_cast<uint32_t>(e.pending.size());
    e.pending.clear();
  }

  // Calls due(e) for each entry whose deadline has passed; due returns false when it
  // freed e. Returns the earliest deadline of the entries left.
  template <typename Due>
  Instant sweep(Instant now, Due&& due) {
    Instant next = Instant::never();
    for (size_t i = 0; i < high_water_; ++i) {
      Entry& e = entries_[i];
      if (e.state == State::kFree) continue;
      if (e.deadline <= now && !due(e)) continue;
      next = earliest(next, e.deadline);
    }
    return next;
  }

  // Frees every entry, handing queued frames to act.drop_pending (teardown).
  void clear(PendingSink& act) {
    for (size_t i = 0; i < high_water_; ++i) {
      if (entries_[i].state != State::kFree) release(entries_[i], act);
    }
    high_water_ = 0;
  }

  size_t live() const { return live_; }
  uint64_t failures() const { return failures_; }

 private:
  std::vector<Entry> entries_;
  uint32_t max_pending_per_entry_;
  uint32_t max_pending_total_;
  size_t live_ = 0;
  size_t high_water_ = 0;
  uint32_t pending_total_ = 0;
  uint64_t failures_ = 0;
};

}  // namespace ws
