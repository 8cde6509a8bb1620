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
// - the key is stored beside the pointer: a miss (a new SYN, a stray segment) is answered
//   without touching any Tcb.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "stack/tcp/tcb.hpp"

namespace ws::tcp {

class ConnTable {
 public:
  static constexpr size_t kMinCapacity = 256;

  ConnTable() { rebuild(kMinCapacity); }
  ConnTable(const ConnTable&) = delete;
  ConnTable& operator=(const ConnTable&) = delete;

  size_t size() const { return size_; }
  size_t capacity() const { return mask_ + 1; }
  size_t memory_bytes() const { return capacity() * sizeof(Entry); }

  Tcb* find(const FourTuple& t) const {
    for (size_t i = home(t);; i = (i + 1) & mask_) {
      const Entry& e = slots_[i];
      if (e.tcb == nullptr) return nullptr;
      if (e.key == t) return e.tcb;
    }
  }

  // `t` must not be present (the stack looks it up first).
  void insert(const FourTuple& t, Tcb* c) {
    if (2 * (size_ + 1) > capacity()) rebuild(2 * capacity());
    place(t, c);
    ++size_;
  }

  // Removes `t` if it maps to `c`; true if it did.
  bool erase(const FourTuple& t, const Tcb* c);

  // Calls f(Tcb*) for every entry; f must not insert or erase.
  template <class F>
  void for_each(F&& f) const {
    for (size_t i = 0; i <= mask_; ++i)
      if (slots_[i].tcb != nullptr) f(slots_[i].tcb);
  }

 private:
  struct Entry {
    FourTuple key;
    Tcb* tcb = nullptr;  // nullptr: empty
  };
  size_t home(const FourTuple& t) const { return FourTupleHash{}(t)&mask_; }
  void place(const FourTuple& t, Tcb* c) {
    size_t i = home(t);
    while (slots_[i].tcb != nullptr) i = (i + 1) & mask_;
    slots_[i] = {t, c};
  }
  // Re-inserts every entry into a new array of `cap` entries (a power of two).
  void rebuild(size_t cap);

  std::unique_ptr<Entry[]> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace ws::tcp
