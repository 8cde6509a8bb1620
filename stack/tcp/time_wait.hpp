// Connections in TIME-WAIT, each kept as a record of what RFC 9293 3.10.7.4 (TIME-WAIT
// STATE), RFC 7323 PAWS and an RFC 6191 takeover still need (112 bytes), instead of the
// Tcb that carried the connection (about 1.5 KB).
//
// Why: a server that closes first holds one TIME-WAIT per connection for 2 MSL. Held as
// Tcbs, the slots of the last time_wait_max connections circulate, and every new
// connection is built in a slot that has gone cold since it was last used (tens of MB at
// the default bound). As records, the Tcb goes back to the free slots as soon as its last
// ACK is out and the next connection takes it while it is still in the cache.
//
// The records live in chunks that are never moved, in the order of their 2 MSL deadline
// (a doubly linked list, oldest first: every record waits the same TcpConfig::time_wait,
// and one whose wait starts over moves to the end). They are found by tuple through an
// index of 8-byte entries (32 bits of the tuple's hash, the record's number), open
// addressing with linear probing as in the connection table but with the key kept in the
// record: at the default bound the index is 512 KiB and stays in the cache, where entries
// holding the tuple took 3.7 MB. The hash is the connection table's (same key), so that a
// Tcb's hash serves its record and back. Removal from anywhere is O(1), and a freed
// record is the next one used.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "stack/tcp/conn_table.hpp"
#include "stack/tcp/reply_limit.hpp"

namespace ws::tcp {

struct TimeWaitRecord {
  FourTuple t;
  uint64_t hash = 0;       // TupleHash of `t`
  Instant until;           // the end of 2 MSL
  Instant ts_recent_time;  // when ts_recent was taken (RFC 7323 5.5)
  SeqNum snd_nxt;          // after our FIN: the sequence number of our ACKs
  SeqNum rcv_nxt;          // after the peer's FIN
  uint32_t ts_recent = 0;
  uint32_t ts_offset = 0;          // our timestamp clock's offset for the tuple (IsnGenerator)
  uint32_t isn_f = 0;              // RFC 6528's F for the tuple: a takeover's ISN needs no hash
  uint16_t window = 0;             // the window field of our ACKs (the last right edge kept)
  uint8_t fam = 0;                 // family_index of the remote address
  bool ts_ok = false;              // timestamps were negotiated
  uint32_t num = 0;                // the record's number in the index (1-based; fixed)
  UnacceptableReplyLimit replies;  // ACKs to unacceptable segments (time_wait_input.cpp)
  TimeWaitRecord* prev = nullptr;  // deadline order, oldest first
  TimeWaitRecord* next = nullptr;
};
// docs/tcp.md and docs/config.md give the size (and the memory time_wait_max holds).
static_assert(sizeof(TimeWaitRecord) == 112);

// RFC 6191: a SYN to a tuple in TIME-WAIT is no old duplicate when its timestamp is newer
// than the last one the connection took (or, without timestamps, when its sequence number
// lies beyond the connection's).
inline bool syn_is_newer(const Segment& s, bool ts_ok, uint32_t ts_recent, SeqNum rcv_nxt) {
  return ts_ok && s.opts.ts_val ? static_cast<int32_t>(*s.opts.ts_val - ts_recent) > 0
                                : s.seq > rcv_nxt;
}

class TimeWaitTable {
 public:
  explicit TimeWaitTable(const std::array<uint64_t, 4>& key = {}) : hash_(key) {
    rebuild(kMinSlots);
  }
  TimeWaitTable(const TimeWaitTable&) = delete;
  TimeWaitTable& operator=(const TimeWaitTable&) = delete;

  size_t size() const { return size_; }
  // Records' chunks and the index: the chunks stay allocated for the next burst.
  size_t memory_bytes() const {
    return chunks_.size() * kChunk * sizeof(TimeWaitRecord) + (mask_ + 1) * sizeof(Slot);
  }

  // Empty (most segments of most stacks): no hashing.
  TimeWaitRecord* find(const FourTuple& t) const {
    if (size_ == 0) return nullptr;
    const uint64_t h = hash_(t);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot s = slots_[i];
      if (s.num == 0) return nullptr;
      if (s.tag != static_cast<uint32_t>(h)) continue;
      TimeWaitRecord* r = at(s.num);
      if (r->t == t) return r;
    }
  }
  // A receive burst's prefetch (prefetch.cpp), for a SYN whose tuple hashes to `h`: first
  // the index slot where its search starts; a few frames later, once that slot is in the
  // cache, the lines of the record whose tag matches (the tuple is not compared: a hint).
  // A SYN that takes a record over otherwise waits for both in turn, since the records of
  // a busy server's TIME-WAIT outgrow a core's cache.
  void prefetch_slot(uint64_t h) const {
    if (size_ != 0) __builtin_prefetch(&slots_[h & mask_]);
  }
  void prefetch_record(uint64_t h) const;
  // A record for `t`, which must not be held yet, last in the deadline order with
  // `until`; `hash`: TupleHash of `t` under this table's key. Its other fields are the
  // caller's to set (none is cleared).
  TimeWaitRecord& add(const FourTuple& t, uint64_t hash, Instant until);
  void remove(TimeWaitRecord& r);
  // A retransmitted FIN: the 2 MSL start over, and the record moves to the end.
  void restart(TimeWaitRecord& r, Instant until);
  // Calls f(const TimeWaitRecord*) for every record; f must not add or remove.
  template <class F>
  void for_each(F&& f) const {
    for (const TimeWaitRecord* r = head_; r != nullptr; r = r->next) f(r);
  }
  // The record whose deadline comes first, or nullptr.
  TimeWaitRecord* oldest() const { return head_; }
  Instant next_deadline() const { return head_ != nullptr ? head_->until : Instant::never(); }

 private:
  struct Slot {
    uint32_t tag = 0;  // the low 32 bits of the hash (the home slot's bits among them)
    uint32_t num = 0;  // the record's number; 0: empty
  };
  static constexpr size_t kChunk = 512;  // records per chunk (a power of two)
  static constexpr size_t kMinSlots = 256;
  TimeWaitRecord* at(uint32_t num) const {
    return &chunks_[(num - 1) / kChunk][(num - 1) % kChunk];
  }
  void place(Slot s);
  void rebuild(size_t cap);
  void erase_slot(const TimeWaitRecord& r);
  void link_last(TimeWaitRecord& r);
  void unlink(TimeWaitRecord& r);

  TupleHash hash_;
  std::unique_ptr<Slot[]> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
  std::vector<std::unique_ptr<TimeWaitRecord[]>> chunks_;
  std::vector<TimeWaitRecord*> free_;  // last freed on top: reused while in the cache
  TimeWaitRecord* head_ = nullptr;
  TimeWaitRecord* tail_ = nullptr;
};

}  // namespace ws::tcp
