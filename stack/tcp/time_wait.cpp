#include "stack/tcp/time_wait.hpp"

namespace ws::tcp {

TimeWaitRecord& TimeWaitTable::add(const FourTuple& t, uint64_t hash, Instant until) {
  if (free_.empty()) {
    // A chunk at a time: no allocation per record, and records never move (the index and
    // the deadline list point at them).
    chunks_.push_back(std::make_unique<TimeWaitRecord[]>(kChunk));
    TimeWaitRecord* c = chunks_.back().get();
    free_.reserve(free_.size() + kChunk);
    for (size_t i = kChunk; i > 0; --i) free_.push_back(&c[i - 1]);
  }
  TimeWaitRecord* r = free_.back();
  free_.pop_back();
  r->t = t;
  r->until = until;
  r->hash = index_.insert(t, r, hash);
  link_last(*r);
  return *r;
}

void TimeWaitTable::remove(TimeWaitRecord& r) {
  index_.erase(r.t, &r, r.hash);
  unlink(r);
  free_.push_back(&r);
}

void TimeWaitTable::restart(TimeWaitRecord& r, Instant until) {
  r.until = until;
  unlink(r);
  link_last(r);
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
