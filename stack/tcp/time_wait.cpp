#include "stack/tcp/time_wait.hpp"

#include <utility>

namespace ws::tcp {

TimeWaitRecord& TimeWaitTable::add(const FourTuple& t, uint64_t hash, Instant until) {
  if (free_.empty()) {
    // A chunk at a time: no allocation per record, and records never move (the index
    // numbers them, the deadline list points at them).
    chunks_.push_back(std::make_unique<TimeWaitRecord[]>(kChunk));
    TimeWaitRecord* c = chunks_.back().get();
    const auto first = static_cast<uint32_t>((chunks_.size() - 1) * kChunk + 1);
    free_.reserve(free_.size() + kChunk);
    for (size_t i = kChunk; i > 0; --i) {
      c[i - 1].num = first + static_cast<uint32_t>(i - 1);
      free_.push_back(&c[i - 1]);
    }
  }
  TimeWaitRecord* r = free_.back();
  free_.pop_back();
  r->t = t;
  r->hash = hash;
  r->until = until;
  if (2 * (size_ + 1) > mask_ + 1) rebuild(2 * (mask_ + 1));
  place({static_cast<uint32_t>(hash), r->num});
  ++size_;
  link_last(*r);
  return *r;
}

void TimeWaitTable::prefetch_record(uint64_t h) const {
  if (size_ == 0) return;
  for (size_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot s = slots_[i];
    if (s.num == 0) return;
    if (s.tag != static_cast<uint32_t>(h)) continue;
    // A record spans two or three cache lines, wherever its 112 bytes fall.
    const auto* b = reinterpret_cast<const char*>(at(s.num));
    __builtin_prefetch(b);
    __builtin_prefetch(b + sizeof(TimeWaitRecord) / 2);
    __builtin_prefetch(b + sizeof(TimeWaitRecord) - 1);
    return;
  }
}

void TimeWaitTable::remove(TimeWaitRecord& r) {
  erase_slot(r);
  unlink(r);
  free_.push_back(&r);
}

void TimeWaitTable::restart(TimeWaitRecord& r, Instant until) {
  r.until = until;
  unlink(r);
  link_last(r);
}

void TimeWaitTable::place(Slot s) {
  size_t i = s.tag & mask_;
  while (slots_[i].num != 0) i = (i + 1) & mask_;
  slots_[i] = s;
}

void TimeWaitTable::erase_slot(const TimeWaitRecord& r) {
  size_t i = r.hash & mask_;
  while (slots_[i].num != r.num) i = (i + 1) & mask_;
  i = shift_back(
      slots_.get(), mask_, i, [](const Slot& s) { return s.num == 0; },
      [](const Slot& s) { return s.tag; });
  slots_[i] = Slot{};
  --size_;
  if (mask_ + 1 > kMinSlots && 8 * size_ < mask_ + 1) {
    size_t cap = kMinSlots;
    while (cap < 4 * size_) cap *= 2;
    rebuild(cap);
  }
}

// The home slot is taken from the tag's 32 bits: time_wait_max (at most 2^24) keeps the
// index below 2^26 slots.
void TimeWaitTable::rebuild(size_t cap) {
  std::unique_ptr<Slot[]> old = std::exchange(slots_, std::make_unique<Slot[]>(cap));
  const size_t old_cap = old ? mask_ + 1 : 0;
  mask_ = cap - 1;
  for (size_t i = 0; i < old_cap; ++i)
    if (old[i].num != 0) place(old[i]);
}

void TimeWaitTable::link_last(TimeWaitRecord& r) {
  r.prev = tail_;
  r.next = nullptr;
  if (tail_ != nullptr)
    tail_->next = &r;
  else
    head_ = &r;
  tail_ = &r;
}

void TimeWaitTable::unlink(TimeWaitRecord& r) {
  if (r.prev != nullptr)
    r.prev->next = r.next;
  else
    head_ = r.next;
  if (r.next != nullptr)
    r.next->prev = r.prev;
  else
    tail_ = r.prev;
  r.prev = r.next = nullptr;
}

}  // namespace ws::tcp
