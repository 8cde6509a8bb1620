// The connection table of one TcpStack: 4-tuple -> Tcb, open addressing with linear
// probing over a power-of-two array of (tuple, Tcb*) entries.
//
// Why not std::unordered_map: it allocates a node per connection (a malloc/free pair per
// connection under churn) and never gives its bucket array back, so after an overload the
// lookups of a few dozen connections walked a table sized for thousands. Here:
// - no allocation per connection; the array is reallocated only when it grows or shrinks;
// - deletion shifts the following entries back (no tombstones), so a table that has seen
//   millions of connections probes exactly like a fresh one holding the same tuples;
// - it grows at a load of 1/2 and shrinks below 1/8 (to a load of at most 1/4), so memory
//   and probe lengths follow the live population back down once a burst is over;
// - the key is stored beside the pointer, with its hash: a miss (a new SYN, a stray
//   segment) is answered without touching any Tcb, and neither deletion's backward shift
//   nor a resize hashes anything again.
//
// The hash is keyed (the stack's secret, TcpStack): a peer that picks its addresses and
// ports cannot aim them at one home slot, as it could with a fixed mix of the tuple, and
// pile them into one long probe run (hash flooding). Not SipHash per segment: two
// 64x64->128-bit multiply-folds with the key xored into every input word (the
// construction of wyhash, which Go's runtime map hash also uses with a per-process
// seed). Not a PRF, but without the key the slot of a tuple is not predictable. The
// TIME_WAIT records' index (time_wait.hpp) hashes with the same key (TupleHash).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "stack/tcp/tcb.hpp"

namespace ws::tcp {

// Backward-shift deletion in a linear-probing array of `mask` + 1 entries, for a hole at
// `i`: an entry further along the run moves into the hole unless its home lies cyclically
// in (hole, its position], where the hole is not on its probe path. The run ends at the
// first empty entry. Returns the index left empty (the caller clears it).
template <class E, class IsEmpty, class Home>
size_t shift_back(E* slots, size_t mask, size_t i, IsEmpty is_empty, Home home) {
  for (size_t j = (i + 1) & mask; !is_empty(slots[j]); j = (j + 1) & mask) {
    const size_t k = home(slots[j]) & mask;
    const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (stays) continue;
    slots[i] = slots[j];
    i = j;
  }
  return i;
}

// The keyed hash of a tuple (above).
class TupleHash {
 public:
  // The key is xored with fixed odd constants, so that no key (the zero default of a
  // table in a test, say) leaves a multiplier that is zero for every IPv4 tuple.
  explicit TupleHash(const std::array<uint64_t, 4>& key = {})
      : key_{key[0] ^ 0xa0761d6478bd642full, key[1] ^ 0xe7037ed1a0b428dbull,
             key[2] ^ 0x8ebc6af09c88c6e3ull, key[3] ^ 0x589965cc75374cc3ull} {}
  uint64_t operator()(const FourTuple& t) const {
    const uint64_t ports = uint64_t{t.lport} << 16 | t.rport;
    const uint64_t h = fold(t.raddr.lo ^ key_[0], t.raddr.hi ^ ports ^ key_[1]);
    return fold(h ^ t.laddr.lo ^ key_[2], t.laddr.hi ^ key_[3]);
  }

 private:
  static uint64_t fold(uint64_t a, uint64_t b) {
    const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
    return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
  }
  std::array<uint64_t, 4> key_;
};

class ConnTable {
 public:
  static constexpr size_t kMinCapacity = 256;

  explicit ConnTable(const std::array<uint64_t, 4>& key = {}) : hash_(key) {
    rebuild(kMinCapacity);
  }
  ConnTable(const ConnTable&) = delete;
  ConnTable& operator=(const ConnTable&) = delete;

  size_t size() const { return size_; }
  size_t capacity() const { return mask_ + 1; }
  size_t memory_bytes() const { return capacity() * sizeof(Entry); }

  // The keyed hash of `t` (its home slot is hash & (capacity - 1)).
  uint64_t hash(const FourTuple& t) const { return hash_(t); }

  // Starts loading the home slot of hash `h` into the cache, for a find() shortly after.
  void prefetch_hash(uint64_t h) const { __builtin_prefetch(&slots_[h & mask_]); }

  // The first connection whose hash is `h`, its tuple not compared: for a prefetch's hint.
  const Tcb* find_hashed(uint64_t h) const {
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Entry& e = slots_[i];
      if (e.tcb == nullptr || e.hash == h) return e.tcb;
    }
  }

  Tcb* find(const FourTuple& t) const {
    const uint64_t h = hash(t);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Entry& e = slots_[i];
      if (e.tcb == nullptr) return nullptr;
      if (e.hash == h && e.key == t) return e.tcb;
    }
  }

  // `t` must not be present (the stack looks it up first). Returns its hash, for erase().
  uint64_t insert(const FourTuple& t, Tcb* c) { return insert(t, c, hash(t)); }
  // The same with `h` = hash(t) known already (a TIME_WAIT record's: the same key).
  uint64_t insert(const FourTuple& t, Tcb* c, uint64_t h) {
    if (2 * (size_ + 1) > capacity()) rebuild(2 * capacity());
    place({t, h, c});
    ++size_;
    return h;
  }

  // Removes `t` if it maps to `c`; true if it did. `h`: hash(t), as insert() returned it
  // (the stack keeps it in the Tcb: no second hashing of the tuple). Never resizes: see
  // shrink_for().
  bool erase(const FourTuple& t, const Tcb* c, uint64_t h);
  bool erase(const FourTuple& t, const Tcb* c) { return erase(t, c, hash(t)); }

  // Halves the array (or more) while `peak`, the most entries held lately, and the entries
  // held now would fill less than 1/8 of it, to a load of at most 1/4. The stack calls it
  // now and then, not on every erase: a population that swings between a few and a few
  // hundred connections (a burst of short ones) would otherwise shrink and regrow the
  // array on every swing. True if it shrank.
  bool shrink_for(size_t peak);

  // Calls f(Tcb*) for every entry; f must not insert or erase.
  template <class F>
  void for_each(F&& f) const {
    for (size_t i = 0; i <= mask_; ++i)
      if (slots_[i].tcb != nullptr) f(slots_[i].tcb);
  }

 private:
  struct Entry {
    FourTuple key;
    uint64_t hash = 0;
    Tcb* tcb = nullptr;  // nullptr: empty
  };
  void place(const Entry& e) {
    size_t i = e.hash & mask_;
    while (slots_[i].tcb != nullptr) i = (i + 1) & mask_;
    slots_[i] = e;
  }
  // Re-inserts every entry into a new array of `cap` entries (a power of two).
  void rebuild(size_t cap);

  TupleHash hash_;
  std::unique_ptr<Entry[]> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace ws::tcp
