#include "stack/tcp/conn_table.hpp"

#include <algorithm>
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
  i = shift_back(
      slots_.get(), mask_, i, [](const Entry& e) { return e.tcb == nullptr; },
      [](const Entry& e) { return e.hash; });
  slots_[i] = Entry{};
  --size_;
  return true;
}

bool ConnTable::shrink_for(size_t peak) {
  const size_t need = std::max(peak, size_);
  if (capacity() <= kMinCapacity || 8 * need >= capacity()) return false;
  size_t cap = kMinCapacity;
  while (cap < 4 * need) cap *= 2;
  rebuild(cap);
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
