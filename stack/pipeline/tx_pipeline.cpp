// Per-connection TX batch pipeline; the rules are in tx_pipeline.hpp and docs/pipeline.md.
#include "stack/pipeline/tx_pipeline.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

#include "stack/codec/framing.hpp"

namespace ws::pipeline {

// One batch: a buffer filled at the back by push() and read at the front by the TX step.
// `limit` is where it closes: the MSS-multiple batch limit for a full batch, its capacity
// for a small one (which is promoted, not closed, when a message outgrows it).
struct TxPipeline::Batch {
  Batch* next = nullptr;
  std::unique_ptr<uint8_t[]> data;
  uint32_t capacity = 0;
  uint32_t limit = 0;
  uint32_t len = 0;         // bytes written
  uint32_t read = 0;        // bytes taken by the TX step
  uint64_t stream_off = 0;  // lane stream offset of data[0]
  // Frame marks, set when the batch is opened, so the lane's framing position can be found
  // without following every header the TX step pulls: the stream offset of the first frame
  // that starts at or after data[0] (it may lie beyond this batch), and the start of the
  // frame that holds data[0] (equal to first_frame when data[0] starts a frame).
  uint64_t first_frame = 0;
  uint64_t span_start = 0;
  bool small = false;
  bool closed = false;
};

// Inline: set_mss() asks it for every lane, and a sync() per round trip calls that.
inline bool TxPipeline::tail_open(const Lane& l) const { return l.tail && !l.tail->closed; }

namespace {

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

void accumulate(PipelineCounters& into, const PipelineCounters& from, bool gauges) {
  into.messages += from.messages;
  into.bytes += from.bytes;
  into.express += from.express;
  into.refused += from.refused;
  into.too_large += from.too_large;
  into.batches_allocated += from.batches_allocated;
  into.batches_freed += from.batches_freed;
  into.small_allocated += from.small_allocated;
  into.full_allocated += from.full_allocated;
  into.spare_reuses += from.spare_reuses;
  into.promotions += from.promotions;
  into.batching_entries += from.batching_entries;
  into.backoff_ns += from.backoff_ns;
  into.pulls += from.pulls;
  into.pulled_bytes += from.pulled_bytes;
  if (gauges) {
    into.batches_live += from.batches_live;
    into.batches_in_use += from.batches_in_use;
    into.batches_peak = std::max(into.batches_peak, from.batches_peak);
  }
}

TxPipeline::TxPipeline(const PipelineParams& params) : params_(params) {
  if (params_.max_batch_bytes == 0) params_.max_batch_bytes = kDefaultMaxBatchBytes;
  if (params_.max_batches == 0) params_.max_batches = 1;
  set_mss(params_.initial_mss);
  initial_limit_ = limit_;
}

TxPipeline::~TxPipeline() {
  set_totals(nullptr);
  for (Lane& l : lanes_) {
    while (l.head) {
      Batch* b = l.head;
      l.head = b->next;
      delete b;
    }
  }
  while (spares_) {
    Batch* b = spares_;
    spares_ = b->next;
    delete b;
  }
}

void TxPipeline::set_totals(PipelineCounters* t) {
  if (totals_) {
    totals_->batches_live -= counters_.batches_live;
    totals_->batches_in_use -= counters_.batches_in_use;
  }
  totals_ = t;
  if (totals_) {
    totals_->batches_live += counters_.batches_live;
    totals_->batches_in_use += counters_.batches_in_use;
    totals_->batches_peak = std::max(totals_->batches_peak, counters_.batches_peak);
  }
}

void TxPipeline::reset() {
  for (Lane& l : lanes_) {
    while (l.head) release(pop(l.head));
    l = Lane{};
  }
  const uint32_t kept = counters_.batches_live;
  gauge(&PipelineCounters::batches_in_use, -static_cast<int32_t>(counters_.batches_in_use));
  counters_ = PipelineCounters{};  // the totals keep what was counted: it happened
  counters_.batches_live = counters_.batches_peak = kept;
  queued_ = 0;
  reported_in_flight_ = 0;
  batching_ = false;
  pulled_ever_ = false;
  last_pull_ = Instant{};
  released_at_ = Instant::never();
  open_released_ = true;
  recent_small_ = true;
  selected_ = -1;
  selected_size_ = 0;
  // set_mss(initial_mss) with no batch open: only the limit, worked out at construction.
  mss_ = params_.initial_mss;
  limit_ = initial_limit_;
}

uint32_t TxPipeline::small_capacity() const {
  // Small batches only make sense below the full limit (a tiny MSS times a small maximum
  // can make the full limit itself small).
  return params_.small_batch_bytes < limit_ ? params_.small_batch_bytes : 0;
}

void TxPipeline::set_mss(uint32_t mss) {
  // The TX step reports the MSS on every pull; only a change has work to do.
  if (limit_ != 0 && mss == mss_) return;
  mss_ = mss;
  limit_ = params_.mss_multiple ? pipeline::batch_limit(mss, params_.max_batch_bytes)
                                : params_.max_batch_bytes;
  for (Lane& l : lanes_) {
    if (!tail_open(l)) continue;
    Batch* t = l.tail;
    if (t->capacity >= limit_) {
      // Holds a full batch at the new limit. One that already holds more is closed where
      // it stands: the only batch that is not an MSS multiple, once per MSS change.
      t->small = false;
      t->limit = std::max(limit_, t->len);
      t->closed = t->len >= limit_;
    } else {
      // Too small for the new limit (the MSS grew): keep filling it and promote it when
      // a message outgrows it, like a small batch.
      t->small = true;
      t->limit = t->capacity;
    }
  }
}

uint64_t TxPipeline::queued_bytes(Priority p) const {
  const Lane& l = lanes_[static_cast<size_t>(p)];
  return l.pushed - l.pulled;
}

void TxPipeline::plan(const Lane& l, uint64_t frame, uint64_t& full, uint64_t& small) const {
  full = 0;
  small = 0;
  uint64_t rest = frame;
  bool fills_tail = false;
  if (tail_open(l)) {
    const Batch* t = l.tail;
    if (t->len + rest <= t->limit) return;
    // A small tail is promoted in place (promote()) and then takes up to limit_.
    const uint64_t space = (t->small ? limit_ : t->limit) - t->len;
    if (rest <= space) return;
    rest -= space;
    fills_tail = true;  // it closes the tail, which says traffic is not small
  }
  // Whole full batches, then the last piece in a small batch if it fits one.
  const uint64_t whole = (rest - 1) / limit_;
  full += whole;
  const uint64_t last = rest - whole * limit_;
  if (small_capacity() && recent_small_ && !fills_tail && last <= small_capacity()) {
    small = 1;
  } else {
    full += 1;
  }
}

TxPipeline::Batch* TxPipeline::acquire(bool small) {
  const uint32_t cap = small ? small_capacity() : limit_;
  // A spare that fits: a small request takes only a small spare (the point of small
  // batches is to touch little memory), a full request any spare of the full limit.
  for (Batch** pp = &spares_; *pp; pp = &(*pp)->next) {
    Batch* b = *pp;
    const bool fits = small ? (b->capacity >= cap && b->capacity < limit_) : b->capacity >= cap;
    if (!fits) continue;
    *pp = b->next;
    --spare_count_;
    count(&PipelineCounters::spare_reuses);
    b->next = nullptr;
    b->small = b->capacity < limit_;
    b->limit = b->small ? b->capacity : limit_;
    gauge(&PipelineCounters::batches_in_use, 1);
    return b;
  }
  // At the bound, an unfitting spare gives way to the batch we need.
  if (counters_.batches_live >= params_.max_batches && spares_) {
    Batch* b = spares_;
    spares_ = b->next;
    --spare_count_;
    free_batch(b);
  }
  if (counters_.batches_live >= params_.max_batches) return nullptr;
  Batch* b = new (std::nothrow) Batch;
  if (!b) return nullptr;
  b->data.reset(new (std::nothrow) uint8_t[cap]);
  if (!b->data) {
    delete b;
    return nullptr;
  }
  b->capacity = cap;
  b->small = small;
  b->limit = cap;
  count(&PipelineCounters::batches_allocated);
  count(small ? &PipelineCounters::small_allocated : &PipelineCounters::full_allocated);
  gauge(&PipelineCounters::batches_live, 1);
  gauge(&PipelineCounters::batches_in_use, 1);
  counters_.batches_peak = std::max(counters_.batches_peak, counters_.batches_live);
  if (totals_) totals_->batches_peak = std::max(totals_->batches_peak, counters_.batches_peak);
  return b;
}

void TxPipeline::release(Batch* b) {
  gauge(&PipelineCounters::batches_in_use, -1);
  if (spare_count_ < params_.spare_batches) {
    b->next = spares_;
    b->len = b->read = 0;
    b->closed = false;
    spares_ = b;
    ++spare_count_;
    return;
  }
  free_batch(b);
}

void TxPipeline::free_batch(Batch* b) {
  delete b;
  count(&PipelineCounters::batches_freed);
  gauge(&PipelineCounters::batches_live, -1);
}

bool TxPipeline::promote(Lane& l) {
  // The small tail's bytes move into a full-size buffer and the batch keeps its place in
  // the lane (and its read offset). A full spare lends its buffer and takes the small one
  // (no allocation, the batch count unchanged); otherwise a buffer is allocated and the
  // small one freed. Either way the number of batches does not change, so a promotion
  // is possible at the max_batches bound.
  Batch* t = l.tail;
  for (Batch* s = spares_; s; s = s->next) {
    if (s->capacity < limit_) continue;
    std::memcpy(s->data.get(), t->data.get(), t->len);
    std::swap(t->data, s->data);
    std::swap(t->capacity, s->capacity);
    t->small = false;
    t->limit = limit_;
    count(&PipelineCounters::promotions);
    return true;
  }
  std::unique_ptr<uint8_t[]> data(new (std::nothrow) uint8_t[limit_]);
  if (!data) return false;
  std::memcpy(data.get(), t->data.get(), t->len);
  t->data = std::move(data);
  t->capacity = limit_;
  t->small = false;
  t->limit = limit_;
  count(&PipelineCounters::promotions);
  return true;
}

TxPipeline::Batch* TxPipeline::pop(Batch*& list) {
  Batch* b = list;
  list = b->next;
  b->next = nullptr;
  return b;
}

void TxPipeline::write_frame(Lane& l, uint64_t size, PayloadWriter w, const void* ctx, Batch*& full,
                             Batch*& small, uint64_t from) {
  uint8_t header[kFrameHeaderBytes];
  write_frame_header(header, size);
  // `from`: the frame's first bytes already went straight to the owner (the direct path).
  const uint64_t frame_start = l.pushed - from;
  const uint64_t frame = kFrameHeaderBytes + size;
  uint64_t rest = frame - from;
  while (rest > 0) {
    if (!tail_open(l)) {
      // plan() put whole full batches first and a small one, if any, for the last piece.
      Batch* b = pop(full ? full : small);
      b->stream_off = l.pushed;
      b->span_start = frame_start;
      b->first_frame = l.pushed == frame_start ? frame_start : frame_start + frame;
      if (l.tail) {
        l.tail->next = b;
      } else {
        l.head = b;
      }
      l.tail = b;
    }
    Batch* t = l.tail;
    const uint64_t room = std::min<uint64_t>(rest, t->limit - t->len);
    uint8_t* dst = t->data.get() + t->len;
    const uint64_t at = frame - rest;  // frame offset of dst
    uint64_t n = 0;
    if (at < kFrameHeaderBytes) {
      n = std::min<uint64_t>(room, kFrameHeaderBytes - at);
      std::memcpy(dst, header + at, n);
    }
    if (room > n) {
      w(ctx, at + n - kFrameHeaderBytes, {dst + n, static_cast<size_t>(room - n)});
    }
    t->len += static_cast<uint32_t>(room);
    l.pushed += room;
    rest -= room;
    // Closed exactly at the limit: every batch followed by another is a whole number of
    // segments. A batch that filled up says traffic is not small.
    if (t->len == t->limit && !t->small) {
      t->closed = true;
      recent_small_ = false;
    }
  }
}

uint64_t TxPipeline::frames_that_fit(const Lane& l, uint64_t frame, uint64_t want) const {
  if (!tail_open(l)) return 0;
  const uint64_t k = (l.tail->limit - l.tail->len) / frame;
  return k < want ? k : want;
}

uint8_t* TxPipeline::open_tail_end(Lane& l) { return l.tail->data.get() + l.tail->len; }

void TxPipeline::commit_frames(Lane& l, uint64_t k, uint64_t frame, uint64_t size, Instant now) {
  // k pushes at one instant: batching mode is entered if in flight exceeded the limit when
  // any of them arrived, and in flight only grows with pushes, so the arrival of the last
  // one decides (its own frame not counted).
  queued_ += (k - 1) * frame;
  enter_batching_if_behind(now);
  queued_ += frame;
  Batch* t = l.tail;
  t->len += static_cast<uint32_t>(k * frame);
  l.pushed += k * frame;
  if (t->len == t->limit && !t->small) {
    t->closed = true;
    recent_small_ = false;
  }
  count(&PipelineCounters::messages, k);
  count(&PipelineCounters::bytes, k * size);
}

void TxPipeline::enter_batching_if_behind(Instant now) {
  // The link's state when the message arrives decides the mode: more than one batch
  // already in flight means the TX side is not keeping up.
  if (params_.batching && !batching_ && in_flight() > limit_) {
    batching_ = true;
    count(&PipelineCounters::batching_entries);
    // Counted from the last pull; with none yet, from now.
    if (!pulled_ever_) last_pull_ = now;
  }
}

PushResult TxPipeline::push(std::span<const uint8_t> message, Priority prio, Instant now,
                            bool express) {
  const uint64_t frame = kFrameHeaderBytes + uint64_t{message.size()};
  Lane& l = lanes_[static_cast<size_t>(prio)];
  // Fast path (small messages): the frame fits in the lane's open batch, so no batch is
  // acquired, promoted or closed early, and the general path would do exactly this. It
  // saves the planning and the piecewise copy, which dominated an 8-byte source.
  if (!express && tail_open(l) && l.tail->len + frame <= l.tail->limit) {
    uint8_t* p = open_tail_end(l);
    store_frame_header(p, static_cast<uint32_t>(message.size()));
    if (!message.empty()) std::memcpy(p + kFrameHeaderBytes, message.data(), message.size());
    commit_frames(l, 1, frame, message.size(), now);
    // poll(now) <= now with bytes queued, cheapest test first.
    return {PushStatus::kOk, !batching_ || last_pull_ + params_.backoff <= now ||
                                 closed_waiting() || express_pending()};
  }
  const PayloadWriter copy = [](const void* ctx, uint64_t offset, std::span<uint8_t> out) {
    std::memcpy(out.data(), static_cast<const uint8_t*>(ctx) + offset, out.size());
  };
  return push_general(l, message.size(), now, express, copy, message.data());
}

BulkPushResult TxPipeline::push_frames(std::span<const uint8_t> run, Priority prio, Instant now) {
  BulkPushResult r;
  Lane& l = lanes_[static_cast<size_t>(prio)];
  size_t off = 0;
  while (off < run.size()) {
    // The longest prefix of whole frames that fits in the open batch.
    size_t end = off;
    uint64_t k = 0;
    uint64_t last = 0;
    if (tail_open(l)) {
      const uint64_t room = l.tail->limit - l.tail->len;
      while (run.size() - end >= kFrameHeaderBytes) {
        const uint64_t f = kFrameHeaderBytes + uint64_t{be32(run.data() + end)};
        if (f > run.size() - end || end - off + f > room) break;
        end += f;
        ++k;
        last = f;
      }
    }
    if (k > 0) {
      const uint64_t n = end - off;
      std::memcpy(open_tail_end(l), run.data() + off, n);
      // k pushes at one instant: the arrival of the last one decides batching mode
      // (commit_frames()'s rule), its own frame not counted.
      queued_ += n - last;
      enter_batching_if_behind(now);
      queued_ += last;
      Batch* t = l.tail;
      t->len += static_cast<uint32_t>(n);
      l.pushed += n;
      if (t->len == t->limit && !t->small) {
        t->closed = true;
        recent_small_ = false;
      }
      count(&PipelineCounters::messages, k);
      count(&PipelineCounters::bytes, n - k * kFrameHeaderBytes);
      r.accepted += k;
      r.stream_bytes += n;
      off = end;
      continue;
    }
    // The next frame opens a batch, promotes one or straddles a batch end.
    if (run.size() - off < kFrameHeaderBytes ||
        kFrameHeaderBytes + uint64_t{be32(run.data() + off)} > run.size() - off) {
      count(&PipelineCounters::too_large);
      r.status = PushStatus::kTooLarge;
      break;
    }
    const uint64_t len = be32(run.data() + off);
    const PushResult one = push(run.subspan(off + kFrameHeaderBytes, len), prio, now);
    if (one.status != PushStatus::kOk) {
      r.status = one.status;
      break;
    }
    ++r.accepted;
    r.stream_bytes += kFrameHeaderBytes + len;
    off += kFrameHeaderBytes + len;
  }
  r.notify = r.accepted > 0 && poll(now) <= now;
  return r;
}

PushStatus TxPipeline::prepare(Lane& l, uint64_t bytes, Batch*& full, Batch*& small) {
  uint64_t need_full = 0;
  uint64_t need_small = 0;
  plan(l, bytes, need_full, need_small);
  if (counters_.batches_in_use + need_full + need_small > params_.max_batches) {
    count(&PipelineCounters::refused);
    return PushStatus::kBackpressure;
  }
  // Take every batch the frame needs before writing a byte, so a failed allocation leaves
  // nothing half queued.
  full = nullptr;
  small = nullptr;
  bool ok = true;
  for (uint64_t i = 0; ok && i < need_full + need_small; ++i) {
    const bool is_small = i >= need_full;
    Batch* b = acquire(is_small);
    if (!b) {
      ok = false;
      break;
    }
    Batch*& list = is_small ? small : full;
    b->next = list;
    list = b;
  }
  // A small tail the frame outgrows is promoted first, also before writing a byte.
  if (ok && tail_open(l) && l.tail->small && l.tail->len + bytes > l.tail->limit) {
    ok = promote(l);
  }
  if (!ok) {
    unprepare(full, small);
    count(&PipelineCounters::refused);
    return PushStatus::kBackpressure;
  }
  return PushStatus::kOk;
}

void TxPipeline::unprepare(Batch*& full, Batch*& small) {
  while (full) release(pop(full));
  while (small) release(pop(small));
}

PushResult TxPipeline::push_general(Lane& l, uint64_t size, Instant now, bool express,
                                    PayloadWriter w, const void* ctx) {
  const uint64_t frame = kFrameHeaderBytes + size;
  if (size > kMaxWireMessageBytes || (frame + limit_ - 1) / limit_ > params_.max_batches) {
    count(&PipelineCounters::too_large);
    return {PushStatus::kTooLarge, false};
  }
  Batch* full = nullptr;
  Batch* small = nullptr;
  const PushStatus st = prepare(l, frame, full, small);
  if (st != PushStatus::kOk) return {st, false};

  enter_batching_if_behind(now);

  write_frame(l, size, w, ctx, full, small, 0);
  queued_ += frame;
  count(&PipelineCounters::messages);
  count(&PipelineCounters::bytes, size);
  if (express) {
    l.express_until = l.pushed;
    count(&PipelineCounters::express);
  }
  return {PushStatus::kOk, poll(now) <= now};
}

// --- The direct path (push_bulk_direct) --------------------------------------------------

uint64_t TxPipeline::direct_want(Lane& l, uint64_t frame, uint64_t left, Instant now) {
  selected_ = -1;  // a direct chunk is a pull: the last front() is stale
  // Nothing may have to go before the new messages: no other priority holds bytes, and
  // this one holds at most its open batch (a full batch is pulled by the TX step first).
  for (const Lane& o : lanes_) {
    if (&o != &l && o.pushed != o.pulled) return 0;
  }
  if (l.head && (l.head != l.tail || l.head->closed)) return 0;
  if (frame > kFrameHeaderBytes + kMaxWireMessageBytes) return 0;
  // The arrival of the first message decides the mode, as for push().
  enter_batching_if_behind(now);
  const uint64_t avail = std::min<uint64_t>(left, kDirectMaxBytes / frame + 1) * frame;
  if (batching_) {
    // Whole batches: the open one completed, then as many more as the room takes.
    const uint64_t read = l.head ? l.head->read : 0;
    const uint64_t old = l.head ? l.head->len - read : 0;
    const uint64_t first = limit_ - (l.head ? l.head->len : 0);
    if (avail < first) return 0;  // cannot fill a batch: the open batch holds them
    return old + std::min(avail, kDirectMaxBytes);
  }
  if (queued_ != 0) return 0;  // the TX step could not hand these to TCP: they go first
  return std::min(avail, direct_cap(frame));
}

uint64_t TxPipeline::direct_cap(uint64_t frame) const {
  // Outside batching mode, the messages that arrive while in flight is at most one batch
  // go at once; the one that finds more enters batching mode (push()'s rule). With batching
  // off there is no such limit.
  if (!params_.batching) return kDirectMaxBytes;
  const uint64_t in = in_flight();
  return in > limit_ ? 0 : ((limit_ - in) / frame + 1) * frame;
}

bool TxPipeline::direct_plan(Lane& l, uint64_t frame, uint64_t left, uint64_t room,
                             DirectChunk& d) const {
  const Batch* b = l.head;
  const uint64_t avail = std::min<uint64_t>(left, kDirectMaxBytes / frame + 1) * frame;
  d = {};
  d.old = b ? b->len - b->read : 0;
  if (batching_) {
    const uint64_t first = limit_ - (b ? b->len : 0);
    if (room < d.old + first || avail < first) return false;
    const uint64_t more = std::min((room - d.old - first) / limit_, (avail - first) / limit_);
    d.fresh = first + more * limit_;
  } else {
    d.fresh = std::min({room, avail, direct_cap(frame)});
    if (d.fresh == 0) return false;
  }
  d.frames = d.fresh / frame;
  d.split = d.fresh % frame;
  d.total = d.old + d.fresh;
  return true;
}

void TxPipeline::RingCursor::copy(const uint8_t* src, uint64_t n) {
  uint64_t done = 0;
  while (done < n) {
    if (space == 0) next_run();
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n - done, space));
    std::memcpy(p, src + done, k);
    p += k;
    space -= k;
    done += k;
  }
}

const uint8_t* TxPipeline::direct_old_bytes(const Lane& l) const {
  return l.head ? l.head->data.get() + l.head->read : nullptr;
}

bool TxPipeline::direct_prepare(Lane& l, uint64_t frame, DirectChunk& d) {
  d.full = d.small_list = nullptr;
  if (d.split == 0) return true;
  // The cut frame's rest stays here, in new batches: the open batch's bytes go to the ring
  // with the chunk, and it is released once TCP took them. Until then it stays untouched in
  // the lane, so a chunk TCP does not take changes nothing. The batches for the rest are
  // planned as for an empty lane, after a batch was filled (traffic is not small).
  Batch* b = l.head;
  l.head = l.tail = nullptr;
  const bool was_small = recent_small_;
  if (batching_) recent_small_ = false;
  const PushStatus st = prepare(l, frame - d.split, d.full, d.small_list);
  l.head = l.tail = b;
  if (st != PushStatus::kOk) {
    recent_small_ = was_small;
    return false;
  }
  return true;
}

void TxPipeline::direct_abort(DirectChunk& d) { unprepare(d.full, d.small_list); }

void TxPipeline::direct_commit(Lane& l, const DirectChunk& d, uint64_t payload, Instant now) {
  Batch* b = l.head;
  const uint64_t end = l.pushed + d.fresh;
  queued_ -= d.old;
  l.pushed = end;
  l.pulled = end;
  if (b) {
    if (d.split != 0) {
      // Its bytes went with the chunk; the cut frame's rest gets the prepared batches.
      l.head = l.tail = nullptr;
      release(b);
    } else {
      // Emptied by the chunk, nothing cut: rewound at a message boundary (head_drained).
      b->len = b->read = 0;
      b->stream_off = end;
      b->first_frame = b->span_start = end;
    }
  }
  recent_small_ = !batching_ && d.total <= params_.small_batch_bytes;
  count(&PipelineCounters::messages, d.frames);
  count(&PipelineCounters::bytes, payload);
  count(&PipelineCounters::pulls);
  count(&PipelineCounters::pulled_bytes, d.total);
  if (batching_ && now > last_pull_) count(&PipelineCounters::backoff_ns, (now - last_pull_).ns());
  last_pull_ = now;
  pulled_ever_ = true;
  reported_in_flight_ += d.total;  // TCP holds it now
}

bool TxPipeline::direct_one_ok(const Lane& l, uint64_t frame, Instant now) {
  selected_ = -1;  // as direct_want: the chunk is a pull
  // queued_ counts every priority's unread bytes; an open batch without any is rewound by
  // direct_commit.
  if (queued_ != 0 || (l.head && (l.head != l.tail || l.head->closed))) return false;
  if (frame > kFrameHeaderBytes + kMaxWireMessageBytes) return false;
  enter_batching_if_behind(now);
  // Outside batching mode in flight is at most one batch (or batching is off), so
  // direct_cap(frame) >= frame holds without its division.
  return !batching_;
}

bool TxPipeline::direct_frames_ok(const Lane& l, Instant now) {
  (void)l;
  selected_ = -1;
  if (queued_ != 0) return false;  // nothing of any priority may be queued
  enter_batching_if_behind(now);
  return !batching_;
}

uint64_t TxPipeline::direct_frames_prefix(std::span<const uint8_t> run, uint64_t room,
                                          uint64_t& frames) const {
  // Whole frames that fit the room, each arriving with in flight (TCP's bytes plus the
  // frames before it) at most one batch: push() would make those available at once. The
  // first that finds more would enter batching mode, so it and the rest go to the pipeline.
  const uint64_t base = in_flight();
  uint64_t n = 0;
  frames = 0;
  while (run.size() - n >= kFrameHeaderBytes) {
    if (params_.batching && base + n > limit_) break;
    const uint64_t f = kFrameHeaderBytes + uint64_t{be32(run.data() + n)};
    if (f > run.size() - n || n + f > room) break;
    n += f;
    ++frames;
  }
  return n;
}

void TxPipeline::direct_frames_commit(Lane& l, uint64_t bytes, uint64_t frames, Instant now) {
  DirectChunk d;
  d.fresh = d.total = bytes;
  d.frames = frames;
  direct_commit(l, d, bytes - frames * kFrameHeaderBytes, now);
}

void TxPipeline::direct_keep_rest(Lane& l, uint64_t rest, uint32_t size) {
  l.pushed += rest;
  l.pulled += rest;
  reported_in_flight_ += rest;
  count(&PipelineCounters::messages);
  count(&PipelineCounters::bytes, size);
  // A full drain leaves batching mode (consume()'s rule).
  if (queued_ == 0) batching_ = false;
}

void TxPipeline::kept_written(uint64_t n) {
  count(&PipelineCounters::pulls);
  count(&PipelineCounters::pulled_bytes, n);
}

void TxPipeline::direct_rest(Lane& l, DirectChunk& d, uint64_t size, PayloadWriter w,
                             const void* ctx) {
  if (d.split != 0) {
    const uint64_t rest = kFrameHeaderBytes + size - d.split;
    // l.pushed is inside the cut frame, `split` bytes after its start.
    write_frame(l, size, w, ctx, d.full, d.small_list, d.split);
    queued_ += rest;
    count(&PipelineCounters::messages);
    count(&PipelineCounters::bytes, size);
  }
  // A full drain leaves batching mode (consume()'s rule).
  if (queued_ == 0) batching_ = false;
}

bool TxPipeline::express_pending() const {
  for (const Lane& l : lanes_) {
    if (l.express_until > l.pulled) return true;
  }
  return false;
}

bool TxPipeline::closed_waiting() const {
  // Only a lane's head can be a closed batch with bytes to pull: a closed batch the TX
  // step emptied is released at once (head_drained), and only the tail is ever open.
  for (const Lane& l : lanes_) {
    if (l.head && l.head->closed) return true;
  }
  return false;
}

Instant TxPipeline::poll(Instant now) const {
  if (queued_ == 0) return Instant::never();
  // A full batch is due at once, also in batching mode: the backoff holds only the open
  // batch. Waiting for the deadline with a full batch queued left TCP idle for up to a
  // backoff after every on_writable (docs/pipeline.md, "Batching mode", rule 2).
  if (!batching_ || express_pending() || closed_waiting()) return now;
  return last_pull_ + params_.backoff;
}

std::span<const uint8_t> TxPipeline::available(const Lane& l, uint64_t finish_to) const {
  const Batch* b = l.head;
  if (!b || b->read == b->len) return {};
  uint64_t end = b->len;
  if (!b->closed && batching_ && !open_released_) {
    // The open batch is held back in batching mode, except for bytes an express message
    // released and, when a higher priority waits behind it, the rest of the message the
    // TX step has started.
    const uint64_t pos = b->stream_off + b->read;
    uint64_t until = pos;
    if (l.express_until > until) until = l.express_until;
    if (pos + finish_to > until) until = pos + finish_to;
    end = std::min<uint64_t>(b->len, until - b->stream_off);
  }
  return {b->data.get() + b->read, static_cast<size_t>(end - b->read)};
}

uint64_t TxPipeline::to_boundary(Lane& l) {
  // A lane with nothing queued is at a boundary: pushes are whole frames.
  if (l.pulled == l.pushed) return 0;
  const Batch* b = l.head;  // holds the pull position (it has unread bytes)
  const uint64_t pos = l.pulled;
  if (pos < b->first_frame) {
    // Inside the frame that began before this batch.
    const uint64_t header_end = b->span_start + kFrameHeaderBytes;
    return pos < header_end ? header_end - pos : b->first_frame - pos;
  }
  // Walk the headers from a known frame start in this batch up to the pull position.
  uint64_t s = l.walk_frame;
  if (s == UINT64_MAX || s < b->first_frame || s > pos) s = b->first_frame;
  for (;;) {
    if (s == pos) {
      l.walk_frame = s;
      return 0;
    }
    // s < pos, so the header starts in this batch; it may end in the next one (frames are
    // queued whole, so that one exists).
    uint8_t h[kFrameHeaderBytes];
    const uint64_t off = s - b->stream_off;
    const uint64_t here = std::min<uint64_t>(kFrameHeaderBytes, b->len - off);
    std::memcpy(h, b->data.get() + off, here);
    if (here < kFrameHeaderBytes)
      std::memcpy(h + here, b->next->data.get(), kFrameHeaderBytes - here);
    const uint64_t end = s + kFrameHeaderBytes + be32(h);
    if (end > pos) {
      l.walk_frame = s;
      const uint64_t header_end = s + kFrameHeaderBytes;
      return pos < header_end ? header_end - pos : end - pos;
    }
    s = end;
  }
}

std::span<const uint8_t> TxPipeline::front(Instant now) {
  selected_ = -1;
  selected_size_ = 0;
  // At the backoff deadline the TX step takes whatever is there, open batches included,
  // for all its pulls at this instant (the first one moves last_pull_).
  if (batching_ && now >= last_pull_ + params_.backoff) released_at_ = now;
  open_released_ = !batching_ || released_at_ == now;
  size_t busy = 0;
  size_t lane = 0;
  for (size_t i = 0; i < kPriorityCount; ++i) {
    if (lanes_[i].pushed == lanes_[i].pulled) continue;
    ++busy;
    lane = i;
  }
  if (busy == 0) return {};
  if (busy == 1) {
    // One priority in use (a bulk source, an echo): where its messages begin and end does
    // not matter, so no framing is followed and spans run to the end of the batch.
    const std::span<const uint8_t> s = available(lanes_[lane], 0);
    if (!s.empty()) {
      selected_ = static_cast<int>(lane);
      selected_size_ = s.size();
    }
    return s;
  }
  // Several priorities have bytes: a switch may only happen at a message end.
  uint64_t tb[kPriorityCount];
  for (size_t i = 0; i < kPriorityCount; ++i) tb[i] = to_boundary(lanes_[i]);
  for (size_t i = 0; i < kPriorityCount; ++i) {
    const Lane& l = lanes_[i];
    if (tb[i] == 0) continue;
    // Mid-message: this lane goes first. While another priority has bytes waiting, the
    // rest of this message is released even from a held open batch (nothing can pass it);
    // when a higher one waits, stop at the message end and let it in. Otherwise go on, so
    // bulk data is not cut into message-sized pieces.
    bool higher_waiting = false;
    bool other_waiting = false;
    for (size_t j = 0; j < kPriorityCount; ++j) {
      if (j == i || available(lanes_[j], 0).empty()) continue;
      other_waiting = true;
      higher_waiting |= j < i;
    }
    std::span<const uint8_t> s = available(l, other_waiting ? tb[i] : 0);
    if (higher_waiting) s = s.first(std::min<uint64_t>(s.size(), tb[i]));
    if (s.empty()) return {};
    selected_ = static_cast<int>(i);
    selected_size_ = s.size();
    return s;
  }
  for (size_t i = 0; i < kPriorityCount; ++i) {
    const std::span<const uint8_t> s = available(lanes_[i], 0);
    if (s.empty()) continue;
    selected_ = static_cast<int>(i);
    selected_size_ = s.size();
    return s;
  }
  return {};
}

void TxPipeline::head_drained(Lane& l) {
  Batch* b = l.head;
  const bool was_small = recent_small_;
  recent_small_ = b->len <= params_.small_batch_bytes;
  if (b->closed) {
    l.head = b->next;
    if (!l.head) l.tail = nullptr;
    release(b);
    return;
  }
  // The open batch was emptied (the link keeps up): reuse it from the start instead of
  // allocating, unless it is a full batch and the last two drains were small, in which
  // case it goes back to the spares and the next message opens a small batch.
  if (!b->small && was_small && recent_small_ && small_capacity()) {
    l.head = l.tail = nullptr;
    release(b);
    return;
  }
  b->len = b->read = 0;
  b->stream_off = l.pushed;
  b->first_frame = b->span_start = l.pushed;  // pulled == pushed: a message boundary
}

void TxPipeline::consume(size_t n, Instant now) {
  if (n == 0 || selected_ < 0) return;
  n = std::min(n, selected_size_);
  Lane& l = lanes_[selected_];
  selected_ = -1;
  Batch* b = l.head;
  b->read += n;
  l.pulled += n;
  queued_ -= n;
  count(&PipelineCounters::pulls);
  count(&PipelineCounters::pulled_bytes, n);
  if (batching_ && now > last_pull_) count(&PipelineCounters::backoff_ns, (now - last_pull_).ns());
  last_pull_ = now;
  pulled_ever_ = true;
  if (b->read == b->len) head_drained(l);
  // A full drain leaves batching mode.
  if (queued_ == 0) batching_ = false;
}

}  // namespace ws::pipeline
