#include "stack/tcp/conn_table.hpp"

#include <utility>

namespace ws::tcp {

bool ConnTable::erase(const FourTuple& t, const Tcb* c, uint64_t h) {
  size_t i = h & mask_;
  for (;; i = (i + 1) & mask_) {
    const Entry& e = slots_[i];
    if (e.tcb == nullptr) return false;
    if (e.hash == h && e.key == t) break;
  }
  if (slots_[i].tcb != c) return false;
  // Backward-shift deletion (linear probing): an entry further along the run moves into
  // the hole unless its home lies cyclically in (hole, its position], where the hole is
  // not on its probe path. The run ends at the first empty entry.
  for (size_t j = (i + 1) & mask_; slots_[j].tcb != nullptr; j = (j + 1) & mask_) {
    const size_t k = slots_[j].hash & mask_;
    const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (stays) continue;
    slots_[i] = slots_[j];
    i = j;
  }
  slots_[i] = Entry{};
  --size_;
  if (capacity() > kMinCapacity && 8 * size_ < capacity()) {
    size_t cap = kMinCapacity;
    while (cap < 4 * size_) cap *= 2;
    rebuild(cap);
  }
  return true;
}

void ConnTable::rebuild(size_t cap) {
  std::unique_ptr<Entry[]> old = std::exchange(slots_, std::make_unique<Entry[]>(cap));
  const size_t old_cap = old ? mask_ + 1 : 0;
  mask_ = cap - 1;
  for (size_t i = 0; i < old_cap; ++i)
    if (old[i].tcb != nullptr) place(old[i]);
}

}  // namespace ws::tcp
