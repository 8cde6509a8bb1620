// Per-connection TX batch pipeline (docs/pipeline.md: segment and batch size from the MTU,
// batching with deterministic backoff).
//
// Applications push whole messages; the pipeline frames them (length32, stack/codec/framing)
// into batches whose fill limit is a whole multiple of the connection's send MSS, and tells
// the TX step (the owner's loop, which moves bytes into Connection::send) when to pull.
//
// - While the link keeps up, a pushed message is available at once: poll() returns `now`.
// - When more than one batch is in flight (bytes the owner reports as queued in TCP but not
//   acknowledged, plus bytes waiting here), the pipeline enters batching mode: pushes stop
//   asking for a pull, and the TX step backs off until `last successful pull + backoff`,
//   then takes whatever is there. A pull that empties the pipeline leaves batching mode.
// - Express messages bypass batching: they and everything queued before them in their
//   priority are available at once.
// - Priorities are served strictly in order, but only at message boundaries of the stream:
//   TCP carries one byte stream, so a control message may not cut into a data message.
//
// Batches are allocated lazily (2 KiB while recent batches were small, full size
// otherwise), fully drained batches are kept as spares for reuse, and the number of live
// batches is bounded: a push that would need more is refused whole (backpressure), so a
// message is never half queued. Nothing here reads a clock or calls DPDK.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>

#include "stack/core/time.hpp"

namespace ws::pipeline {

inline constexpr uint32_t kDefaultMaxBatchBytes = 65535;
inline constexpr uint32_t kSmallBatchBytes = 2048;

// The largest whole multiple of `mss` not above `max_batch_bytes`, so a batch handed to TCP
// is cut into full segments only. Two edge rules:
// - max_batch_bytes < mss: one segment (mss). A smaller batch would make every segment a
//   runt; the maximum is exceeded by less than one MSS.
// - mss == 0 (not known yet): max_batch_bytes.
inline uint32_t batch_limit(uint32_t mss, uint32_t max_batch_bytes) {
  if (mss == 0) return max_batch_bytes;
  if (max_batch_bytes < mss) return mss;
  return max_batch_bytes / mss * mss;
}

// Plain parameters (the stack does not depend on control/; the data plane maps
// control::PipelineConfig onto this: max_batch_bytes, backoff_us, batching, max_batches).
// The data plane always passes pipeline.backoff_us (default 20 us, chosen by measurement:
// docs/pipeline.md, "Choosing backoff_us"), the same value as here.
struct PipelineParams {
  uint32_t max_batch_bytes = kDefaultMaxBatchBytes;
  Duration backoff = Duration::micros(20);
  bool batching = true;         // false: never enter batching mode
  uint32_t max_batches = 4096;  // live batches (queued + spares), including the open one
  uint32_t small_batch_bytes = kSmallBatchBytes;
  uint32_t spare_batches = 1;  // drained batches kept for reuse instead of freed
  uint32_t initial_mss = 536;  // RFC 9293 default until set_mss() is called
  // false: batches are max_batch_bytes whatever the MSS (the benchmark's "fixed 64512-byte
  // batch" baseline, to show what the MSS multiple is worth).
  bool mss_multiple = true;
};

enum class Priority : uint8_t { kControl = 0, kData = 1 };
inline constexpr size_t kPriorityCount = 2;

enum class PushStatus : uint8_t {
  kOk,
  kBackpressure,  // accepting it would exceed max_batches (or memory ran out): retry later
  kTooLarge,      // needs more than max_batches batches even when empty, or > 4 GiB - 1
};

struct PushResult {
  PushStatus status = PushStatus::kOk;
  // The TX step should pull now (poll(now) <= now). False in batching mode unless the
  // message was express.
  bool notify = false;
};

// push_bulk: how many of the messages were queued (the first `accepted`, each whole), why
// it stopped short (status of the first message not queued; kOk when all were), and
// whether the TX step should pull now.
struct BulkPushResult {
  uint64_t accepted = 0;
  PushStatus status = PushStatus::kOk;
  bool notify = false;
  uint64_t stream_bytes = 0;  // push_frames: bytes of the run accepted (headers included)
};

// push_bulk_direct: messages queued (the first `accepted`, each whole: its bytes went to
// the owner's ring, or some did and the rest waits here), the stream bytes the owner's
// commits took, and whether it stopped because the ring had too little room (the owner's
// reserve then arms its "writable" notice, as Connection::send_reserve does).
struct DirectResult {
  uint64_t accepted = 0;
  uint64_t committed = 0;
  bool room_short = false;
  // With CutRest::kKeep: frame bytes of the last accepted message that are neither in the
  // owner's ring nor queued here; the owner writes them (write_kept) before anything else.
  uint64_t kept = 0;
};

// What push_bulk_direct does with the frame cut at the end of a chunk: queue its rest here
// (filled into batches at once and copied into the ring by a later TX step), or leave it to
// the owner, who writes it in place when the ring has room (write_kept), so that a message
// larger than the ring's room crosses memory once instead of twice.
enum class CutRest : uint8_t { kQueue, kKeep };

// Writes payload bytes [offset, offset + out.size()) of one message into `out`; a message
// that straddles batches is written in pieces.
using PayloadWriter = void (*)(const void* ctx, uint64_t offset, std::span<uint8_t> out);

struct PipelineCounters {
  uint64_t messages = 0;   // accepted
  uint64_t bytes = 0;      // accepted payload bytes (framing headers not included)
  uint64_t express = 0;    // accepted express messages
  uint64_t refused = 0;    // kBackpressure results
  uint64_t too_large = 0;  // kTooLarge results
  uint64_t batches_allocated = 0;
  uint64_t batches_freed = 0;
  uint64_t small_allocated = 0;
  uint64_t full_allocated = 0;
  uint64_t spare_reuses = 0;  // a batch taken from the spares instead of allocated
  uint64_t promotions = 0;    // a small batch outgrown and copied into a full one
  uint64_t batching_entries = 0;
  uint64_t backoff_ns = 0;      // time between pulls spent in batching mode
  uint64_t pulls = 0;           // consume() calls that took bytes
  uint64_t pulled_bytes = 0;    // stream bytes (headers included) taken by the TX step
  uint32_t batches_live = 0;    // allocated and not freed (in use + spares)
  uint32_t batches_in_use = 0;  // holding bytes not yet pulled, or open for appending
  uint32_t batches_peak = 0;    // highest batches_live seen
};

// Adds the counters of `from` to `into`, for totals over many connections. Gauges
// (batches_live, batches_in_use; batches_peak as a maximum) only with `gauges`: a closed
// connection's counters keep adding to the totals, but it holds no batches any more.
void accumulate(PipelineCounters& into, const PipelineCounters& from, bool gauges);

class TxPipeline {
 public:
  explicit TxPipeline(const PipelineParams& params = {});
  ~TxPipeline();
  TxPipeline(const TxPipeline&) = delete;
  TxPipeline& operator=(const TxPipeline&) = delete;

  // Back to the state of a new pipeline for the next connection of the same owner
  // (connection churn: docs/tcp.md, "Memory under connection churn"): queued bytes are
  // dropped, the MSS returns to params().initial_mss, and the counters start again from
  // zero, but up to params().spare_batches batches stay allocated as spares (the gauges
  // count them), so the next connection allocates nothing.
  void reset();

  // The connection's current send MSS (negotiation, PMTU). Batches opened afterwards use the
  // new limit. The open batch of each priority fills up to the new limit (promoted like a
  // small batch if its buffer is too small for it), or is closed where it stands when it
  // already holds at least the new limit.
  void set_mss(uint32_t mss);
  // Bytes the owner has handed to TCP and that are not acknowledged yet (send buffer
  // occupancy). Counted with the bytes waiting here to decide "more than one batch in
  // flight".
  void set_in_flight(uint64_t bytes) { reported_in_flight_ = bytes; }

  // Queues one whole message (framed as a 4-byte length plus payload) or nothing.
  PushResult push(std::span<const uint8_t> message, Priority prio, Instant now,
                  bool express = false);

  // The bulk producer path (docs/pipeline.md, "Bulk push"): queues up to `count` messages
  // of `size` payload bytes, in order, each whole or not at all, with the same rules as
  // `count` calls of push() at `now` (batch limits, batching-mode entry, backpressure), but
  // without a scratch copy: `fill(index, offset, out)` writes the payload straight into the
  // batch. Frames that fit in the open batch are written in one loop with one bookkeeping
  // step for all of them; a frame that opens or straddles batches takes the general path.
  // Never express. Stops at the first message that is refused (see BulkPushResult).
  template <class Fill>
  BulkPushResult push_bulk(uint64_t count, uint32_t size, Priority prio, Instant now, Fill&& fill) {
    BulkPushResult r;
    const uint64_t frame = kFrameBytesOverhead + uint64_t{size};
    Lane& l = lanes_[static_cast<size_t>(prio)];
    while (r.accepted < count) {
      const uint64_t k = frames_that_fit(l, frame, count - r.accepted);
      if (k > 0) {
        // In place: header and payload of k whole frames, no copy and no per-frame
        // bookkeeping.
        uint8_t* p = open_tail_end(l);
        for (uint64_t i = 0; i < k; ++i) {
          store_frame_header(p, size);
          fill(r.accepted + i, uint64_t{0}, std::span<uint8_t>(p + kFrameBytesOverhead, size));
          p += frame;
        }
        commit_frames(l, k, frame, size, now);
        r.accepted += k;
        continue;
      }
      // The frame needs a new batch (or a promotion, or straddles a batch end).
      struct Ctx {
        Fill* fill;
        uint64_t base;
      } ctx{&fill, r.accepted};
      const PayloadWriter w = [](const void* c, uint64_t offset, std::span<uint8_t> out) {
        const auto* x = static_cast<const Ctx*>(c);
        (*x->fill)(x->base, offset, out);
      };
      const PushResult one = push_general(l, size, now, false, w, &ctx);
      if (one.status != PushStatus::kOk) {
        r.status = one.status;
        break;
      }
      ++r.accepted;
    }
    r.notify = r.accepted > 0 && poll(now) <= now;
    return r;
  }

  // A run of whole length32 frames that is already framed (an echo sends back the frames it
  // received, byte for byte): the same as one push() per frame, with each frame's payload,
  // at `now`. The frames that fit in the open batch are copied in one piece with one
  // bookkeeping step; a frame that needs a new batch takes push()'s general path. Stops at
  // the first refused frame. A run that does not end with a whole frame is refused at that
  // frame (kTooLarge), as nothing can make it whole.
  BulkPushResult push_frames(std::span<const uint8_t> run, Priority prio, Instant now);

  // push_frames through the direct path (the echo's replies): while nothing is queued and
  // the pipeline is not in batching mode, the whole frames at the front of the run that
  // push() would make available at once (in flight at most a batch when each arrives) and
  // that fit the room are copied straight into the owner's send ring; the rest of the run
  // goes to push_frames. `committed` gets the bytes the ring took.
  template <class Reserve, class Commit>
  BulkPushResult push_frames_direct(std::span<const uint8_t> run, Priority prio, Instant now,
                                    Reserve&& reserve, Commit&& commit, uint64_t& committed) {
    Lane& l = lanes_[static_cast<size_t>(prio)];
    committed = 0;
    BulkPushResult r;
    if (!run.empty() && direct_frames_ok(l, now)) {
      const auto room = reserve(run.size());
      const std::span<uint8_t> runs[2] = {room.first, room.second};
      uint64_t frames = 0;
      const uint64_t n = direct_frames_prefix(run, runs[0].size() + runs[1].size(), frames);
      if (n > 0) {
        const size_t first = static_cast<size_t>(std::min<uint64_t>(n, runs[0].size()));
        std::memcpy(runs[0].data(), run.data(), first);
        if (n > first) std::memcpy(runs[1].data(), run.data() + first, n - first);
        if (commit(static_cast<size_t>(n)) == n) {
          direct_frames_commit(l, n, frames, now);
          committed = n;
          r.accepted = frames;
          r.stream_bytes = n;
          run = run.subspan(static_cast<size_t>(n));
        }
      }
    }
    if (!run.empty()) {
      const BulkPushResult b = push_frames(run, prio, now);
      r.accepted += b.accepted;
      r.stream_bytes += b.stream_bytes;
      r.status = b.status;
    }
    r.notify = poll(now) <= now;
    return r;
  }

  // The direct path (docs/pipeline.md, "Writing into the send ring"): push_bulk's messages,
  // written straight into the owner's send ring instead of a batch while that is what the
  // TX step would do with them at once, so the batch -> ring copy goes. `reserve(max)`
  // returns room for up to `max` bytes as {first, second} spans (two runs where the ring
  // wraps: tcp::Connection::send_reserve), `commit(n)` queues the first n and returns how
  // many it took (Connection::send_commit). Each chunk counts as its pushes and one pull.
  // - Only while nothing must go first: no other priority holds bytes, and this one at
  //   most its open batch. The owner pulls full batches (step) before.
  // - Outside batching mode: the messages push() would make available at once (while in
  //   flight is at most one batch), as much as the room takes; the last may be cut, its
  //   rest queued here (available at once, like any byte outside batching mode).
  // - In batching mode: whole batches only, as a full batch is the only thing the TX step
  //   may take before the deadline. The open batch is completed in the ring (its unread
  //   bytes copied, then new frames to the batch limit), then as many more batch limits as
  //   the room takes; the frame cut at the end leaves its rest in a new open batch. What
  //   cannot fill a batch is left to push_bulk, where the deadline rule holds it.
  // Stops when neither applies, the room is short, or the messages run out; the caller
  // push_bulk()s what is left if it wants them queued. Never express.
  // With CutRest::kKeep the cut frame's rest is not queued: the chunk ends there, the
  // result's `kept` says how many bytes of it the owner must write (write_kept) before it
  // pushes or pulls anything else. Its stream offsets and in-flight bytes count already.
  //
  // Stays in the header: `fill` is the caller's payload writer, called once per message
  // (every 66 bytes for 64-byte messages), and inlining it into the frame loop is what makes
  // this path cheaper than push_bulk's; behind a function pointer each message would pay an
  // indirect call. Everything that does not touch `fill` per message (planning, the open
  // batch's bytes, the bookkeeping) is out of line in tx_pipeline.cpp.
  template <class Fill, class Reserve, class Commit>
  DirectResult push_bulk_direct(uint64_t count, uint32_t size, Priority prio, Instant now,
                                Fill&& fill, Reserve&& reserve, Commit&& commit,
                                CutRest cut = CutRest::kQueue) {
    DirectResult r;
    Lane& l = lanes_[static_cast<size_t>(prio)];
    const uint64_t frame = kFrameBytesOverhead + uint64_t{size};
    while (r.accepted < count) {
      const uint64_t left = count - r.accepted;
      const uint64_t want = direct_want(l, frame, left, now);
      if (want == 0) break;
      const auto room = reserve(static_cast<size_t>(want));
      RingCursor ring(room.first, room.second);
      DirectChunk d;
      if (!direct_plan(l, frame, left, room.first.size() + room.second.size(), d)) {
        r.room_short = true;
        break;
      }
      // Into the ring, in stream order: the open batch's unread bytes, the whole frames,
      // then the first `split` bytes of the frame cut at the end.
      ring.copy(direct_old_bytes(l), d.old);
      direct_write_frames(ring, d, size, [&](uint64_t i, uint64_t offset, std::span<uint8_t> out) {
        fill(r.accepted + i, offset, out);
      });
      const bool keep = cut == CutRest::kKeep && d.split != 0;
      if (!keep && !direct_prepare(l, frame, d)) break;  // no batch for the cut frame's rest
      if (commit(static_cast<size_t>(d.total)) != d.total) {
        direct_abort(d);  // TCP refused it (the connection is closing): nothing queued
        break;
      }
      direct_commit(l, d, d.frames * uint64_t{size}, now);
      if (keep) {
        r.kept = frame - d.split;
        direct_keep_rest(l, r.kept, size);
        r.accepted += d.frames + 1;
        r.committed += d.total;
        break;
      }
      direct_queue_rest(l, d, size, r.accepted + d.frames, fill);
      r.accepted += d.frames + (d.split != 0 ? 1 : 0);
      r.committed += d.total;
    }
    return r;
  }

  // One message through the direct path, whole, when push_bulk_direct would take it whole
  // in one chunk: nothing queued, outside batching mode, in flight at most a batch, and room
  // for the whole frame. A ping's next message, and a source's when its budget allows one,
  // go this way without the chunk planning that many messages need. True when the message
  // is in the owner's ring (counted as a push and a pull); false with nothing queued or
  // counted here, for push_bulk_direct and push_bulk to decide (the room is short,
  // something must go first, or TCP refused the bytes).
  template <class Fill, class Reserve, class Commit>
  bool push_one_direct(uint32_t size, Priority prio, Instant now, Fill&& fill, Reserve&& reserve,
                       Commit&& commit) {
    Lane& l = lanes_[static_cast<size_t>(prio)];
    const uint64_t frame = kFrameBytesOverhead + uint64_t{size};
    if (!direct_one_ok(l, frame, now)) return false;
    const auto room = reserve(static_cast<size_t>(frame));
    if (room.first.size() + room.second.size() < frame) return false;
    RingCursor ring(room.first, room.second);
    DirectChunk d;
    d.fresh = d.total = frame;
    d.frames = 1;
    // The frame in place, or by pieces across the ring's wrap (direct_write_frames for one
    // frame, without its division).
    if (ring.space >= frame) {
      store_frame_header(ring.p, size);
      fill(uint64_t{0}, uint64_t{0}, std::span<uint8_t>(ring.p + kFrameBytesOverhead, size));
    } else {
      direct_put(ring, size, 0, 0, frame, fill);
    }
    if (commit(static_cast<size_t>(frame)) != frame) return false;
    direct_commit(l, d, size, now);
    return true;
  }

  // The rest of a frame that push_bulk_direct cut with CutRest::kKeep: frame bytes
  // [from, from + left) of a message of `size` payload bytes (the header's, then the
  // payload through `fill(offset, out)`), as many as the ring's room takes, counted as one
  // pull. Returns the bytes TCP took (0 also when it refused them: the connection is
  // closing). The owner calls it again, from + n, until nothing is left.
  template <class Fill, class Reserve, class Commit>
  uint64_t write_kept(uint32_t size, uint64_t from, uint64_t left, Fill&& fill, Reserve&& reserve,
                      Commit&& commit) {
    const auto room = reserve(static_cast<size_t>(left));
    const uint64_t n = std::min<uint64_t>(left, room.first.size() + room.second.size());
    if (n == 0) return 0;
    RingCursor ring(room.first, room.second);
    auto payload = [&fill](uint64_t, uint64_t offset, std::span<uint8_t> out) {
      fill(offset, out);
    };
    direct_put(ring, size, 0, from, from + n, payload);
    if (commit(static_cast<size_t>(n)) != n) return 0;
    kept_written(n);
    return n;
  }

  // When the TX step should next pull: `now` when bytes are available at once (outside
  // batching mode, a full batch, express bytes), otherwise the backoff deadline of batching
  // mode, Instant::never() when nothing is queued.
  Instant poll(Instant now) const;

  // The next bytes the TX step may send now (empty when none): a contiguous piece of one
  // batch, from the highest priority with bytes available, except that a priority in the
  // middle of a message finishes it first. Full batches and express bytes are always
  // available; the partially filled batch only outside batching mode, once the backoff
  // deadline has passed, or for the rest of a started message while another priority
  // waits. Valid until the next push, consume or set_mss.
  std::span<const uint8_t> front(Instant now);
  // The TX step took the first `n` bytes of the last front() (a successful pull if n > 0).
  void consume(size_t n, Instant now);

  // Moves bytes into `sink(std::span<const uint8_t>) -> size_t accepted` until the sink
  // takes less than offered or nothing more is available now. Returns the bytes moved.
  template <class Sink>
  size_t drain(Instant now, Sink&& sink) {
    size_t total = 0;
    for (;;) {
      const std::span<const uint8_t> s = front(now);
      if (s.empty()) break;
      const size_t n = sink(s);
      consume(n, now);
      total += n;
      if (n < s.size()) break;
    }
    return total;
  }

  uint32_t batch_limit() const { return limit_; }
  uint32_t mss() const { return mss_; }
  bool batching() const { return batching_; }
  // Stream bytes (headers included) accepted and not yet pulled, over all priorities.
  uint64_t queued_bytes() const { return queued_; }
  uint64_t queued_bytes(Priority p) const;
  uint64_t in_flight() const { return reported_in_flight_ + queued_; }
  Instant last_pull() const { return last_pull_; }
  const PipelineCounters& counters() const { return counters_; }
  // The owner's running totals over all its pipelines: every later change to counters()
  // is applied to *t as well, so that the owner reads them in O(1) instead of summing
  // every connection's pipeline at each stats interval. The batches this pipeline holds
  // (the gauges) count in *t until it is destroyed or bound elsewhere; its counts do
  // whatever happens to it (reset() included). *t must outlive the pipeline.
  void set_totals(PipelineCounters* t);
  const PipelineParams& params() const { return params_; }

 private:
  // The length32 header is 4 bytes (stack/codec/framing.hpp, kFrameHeaderBytes); spelled
  // here so the inline bulk path needs no framing include.
  static constexpr uint64_t kFrameBytesOverhead = 4;
  struct Batch;
  struct Lane {
    Batch* head = nullptr;
    Batch* tail = nullptr;
    uint64_t pushed = 0;         // stream bytes accepted
    uint64_t pulled = 0;         // stream bytes taken by the TX step
    uint64_t express_until = 0;  // stream offset up to which express released the bytes
    // Where the TX step stands in the lane's framing is not tracked per pull: it only
    // matters while another priority has bytes waiting, and then to_boundary() finds it
    // from the head batch's frame marks, walking forward from this frame start (a cache;
    // UINT64_MAX when unknown).
    uint64_t walk_frame = UINT64_MAX;
  };

  // One chunk of the direct path: the open batch's unread bytes (`old`), the new stream
  // bytes (`fresh`: `frames` whole frames and the first `split` bytes of one more), and the
  // batches acquired beforehand for the cut frame's rest.
  struct DirectChunk {
    uint64_t old = 0;
    uint64_t fresh = 0;
    uint64_t frames = 0;
    uint64_t split = 0;
    uint64_t total = 0;
    Batch* full = nullptr;
    Batch* small_list = nullptr;
  };
  // Where the direct path writes next in the ring's room: the first run, then the second.
  struct RingCursor {
    RingCursor(std::span<uint8_t> first, std::span<uint8_t> second)
        : p(first.data()), space(first.size()), second(second) {}
    void next_run() {
      p = second.data();
      space = second.size();
      second = {};
    }
    // Copies `n` bytes, across the runs.
    void copy(const uint8_t* src, uint64_t n);
    uint8_t* p;
    size_t space;
    std::span<uint8_t> second;
  };
  // Frame bytes [from, to) of message `i` (header, then payload through `fill`), across
  // the runs.
  template <class Fill>
  static void direct_put(RingCursor& ring, uint32_t size, uint64_t i, uint64_t from, uint64_t to,
                         Fill& fill) {
    uint8_t header[kFrameBytesOverhead];
    store_frame_header(header, size);
    while (from < to) {
      if (ring.space == 0) ring.next_run();
      const uint64_t n = std::min<uint64_t>(to - from, ring.space);
      uint64_t h = 0;
      if (from < kFrameBytesOverhead) {
        h = std::min<uint64_t>(n, kFrameBytesOverhead - from);
        std::memcpy(ring.p, header + from, static_cast<size_t>(h));
      }
      if (n > h) {
        fill(i, from + h - kFrameBytesOverhead,
             std::span<uint8_t>(ring.p + h, static_cast<size_t>(n - h)));
      }
      ring.p += n;
      ring.space -= static_cast<size_t>(n);
      from += n;
    }
  }
  // The chunk's whole frames (message i of the chunk is `fill`'s i), then the first
  // `split` bytes of the frame cut at the end.
  template <class Fill>
  static void direct_write_frames(RingCursor& ring, const DirectChunk& d, uint32_t size,
                                  Fill&& fill) {
    const uint64_t frame = kFrameBytesOverhead + uint64_t{size};
    for (uint64_t i = 0; i < d.frames;) {
      // Whole frames while they fit in this run; the one that straddles goes by pieces.
      const uint64_t k = std::min<uint64_t>(d.frames - i, ring.space / frame);
      for (uint64_t j = 0; j < k; ++j) {
        store_frame_header(ring.p, size);
        fill(i + j, uint64_t{0}, std::span<uint8_t>(ring.p + kFrameBytesOverhead, size));
        ring.p += frame;
      }
      ring.space -= static_cast<size_t>(k * frame);
      i += k;
      if (i < d.frames) {
        direct_put(ring, size, i, 0, frame, fill);
        ++i;
      }
    }
    if (d.split != 0) direct_put(ring, size, d.frames, 0, d.split, fill);
  }
  // The cut frame's rest, message `index` of the caller, queued here (direct_rest).
  template <class Fill>
  void direct_queue_rest(Lane& l, DirectChunk& d, uint32_t size, uint64_t index, Fill& fill) {
    struct Ctx {
      std::remove_reference_t<Fill>* fill;
      uint64_t index;
    } ctx{&fill, index};
    const PayloadWriter w = [](const void* c, uint64_t offset, std::span<uint8_t> out) {
      const auto* x = static_cast<const Ctx*>(c);
      (*x->fill)(x->index, offset, out);
    };
    direct_rest(l, d, size, w, &ctx);
  }
  // push_one_direct's condition: the lane holds no unread bytes and nothing else is queued,
  // and push() would make a message of `frame` bytes available at once.
  bool direct_one_ok(const Lane& l, uint64_t frame, Instant now);
  // A bound on one reserve (64 batches of 64 KiB): the ring is filled by a few chunks.
  static constexpr uint64_t kDirectMaxBytes = uint64_t{64} << 16;
  // Bytes to ask the ring for (0: the direct path does not apply now).
  uint64_t direct_want(Lane& l, uint64_t frame, uint64_t left, Instant now);
  // Outside batching mode: the stream bytes that may go before batching mode is entered.
  uint64_t direct_cap(uint64_t frame) const;
  bool direct_plan(Lane& l, uint64_t frame, uint64_t left, uint64_t room, DirectChunk& d) const;
  const uint8_t* direct_old_bytes(const Lane& l) const;
  // Acquires the batches for the cut frame's rest before the commit (false: none to be
  // had, nothing changed).
  bool direct_prepare(Lane& l, uint64_t frame, DirectChunk& d);
  void direct_abort(DirectChunk& d);
  // Bookkeeping of a committed chunk: its pushes (`payload`: the payload bytes of its
  // whole frames) and one pull.
  void direct_commit(Lane& l, const DirectChunk& d, uint64_t payload, Instant now);
  // push_frames_direct: whether the direct path applies (nothing queued, not batching after
  // the arrival), the prefix of the run it may take, and its bookkeeping.
  bool direct_frames_ok(const Lane& l, Instant now);
  uint64_t direct_frames_prefix(std::span<const uint8_t> run, uint64_t room,
                                uint64_t& frames) const;
  void direct_frames_commit(Lane& l, uint64_t bytes, uint64_t frames, Instant now);
  // CutRest::kKeep's bookkeeping: the cut message is accepted, its `rest` bytes pushed and
  // pulled at once in the lane's stream offsets (later pushes start after them) and in
  // flight, as TCP will hold them; then the full-drain rule. kept_written counts the pull.
  void direct_keep_rest(Lane& l, uint64_t rest, uint32_t size);
  void kept_written(uint64_t n);
  // Queues the cut frame's rest (written through `w`), then the full-drain rule.
  void direct_rest(Lane& l, DirectChunk& d, uint64_t size, PayloadWriter w, const void* ctx);
  // Plans and acquires the batches `bytes` more stream bytes need, and promotes a small
  // tail they outgrow, before a byte is written (kBackpressure: nothing changed).
  PushStatus prepare(Lane& l, uint64_t bytes, Batch*& full, Batch*& small);
  void unprepare(Batch*& full, Batch*& small);

  // push() of one frame that does not fit in the open batch whole: plans, acquires and
  // promotes batches, then writes the payload through `w` (possibly in pieces).
  PushResult push_general(Lane& l, uint64_t size, Instant now, bool express, PayloadWriter w,
                          const void* ctx);
  // Whole frames of `frame` bytes (at most `want`) that fit in the lane's open batch.
  uint64_t frames_that_fit(const Lane& l, uint64_t frame, uint64_t want) const;
  uint8_t* open_tail_end(Lane& l);
  static void store_frame_header(uint8_t* p, uint32_t size) {
    p[0] = static_cast<uint8_t>(size >> 24);
    p[1] = static_cast<uint8_t>(size >> 16);
    p[2] = static_cast<uint8_t>(size >> 8);
    p[3] = static_cast<uint8_t>(size);
  }
  // Bookkeeping for k frames just written in place into the open batch, as k pushes.
  void commit_frames(Lane& l, uint64_t k, uint64_t frame, uint64_t size, Instant now);
  // Stream bytes from the lane's pull position to the end of the frame it stands in (or
  // of that frame's header, while the TX step is inside it); 0 at a message boundary.
  uint64_t to_boundary(Lane& l);

  uint32_t small_capacity() const;
  bool tail_open(const Lane& l) const;
  // New batches (full, small) a frame of `frame` bytes needs beyond what the open tail
  // offers (a small tail counts as promoted to full size).
  void plan(const Lane& l, uint64_t frame, uint64_t& full, uint64_t& small) const;
  Batch* acquire(bool small);
  void release(Batch* b);
  void free_batch(Batch* b);
  bool promote(Lane& l);
  static Batch* pop(Batch*& list);
  // Writes one frame into the lane from frame byte `from` on (0: the whole frame; more:
  // its start went to the owner's ring), opening batches from the pre-acquired lists.
  void write_frame(Lane& l, uint64_t size, PayloadWriter w, const void* ctx, Batch*& full,
                   Batch*& small, uint64_t from);
  // The TX step emptied the lane's head batch: release it, or rewind it when it is open.
  void head_drained(Lane& l);
  // Bytes of lane `l` the TX step may take now (from its head batch), ignoring priorities.
  // `finish_to`: also release up to this many bytes (the rest of a started message) from a
  // held open batch.
  std::span<const uint8_t> available(const Lane& l, uint64_t finish_to) const;
  bool express_pending() const;
  // A closed (full) batch waits to be pulled in some lane.
  bool closed_waiting() const;
  void enter_batching_if_behind(Instant now);

  PipelineParams params_;
  uint32_t mss_ = 0;
  uint32_t limit_ = 0;
  uint32_t initial_limit_ = 0;  // limit_ at params_.initial_mss, for reset()
  Lane lanes_[kPriorityCount];
  Batch* spares_ = nullptr;
  uint32_t spare_count_ = 0;
  uint64_t queued_ = 0;
  uint64_t reported_in_flight_ = 0;
  bool batching_ = false;
  bool pulled_ever_ = false;
  Instant last_pull_;
  Instant released_at_ = Instant::never();  // instant at which the deadline released all
  bool open_released_ = true;               // set by front() for available()
  bool recent_small_ = true;                // the last drained batch fit in a small batch
  int selected_ = -1;                       // lane of the last front()
  size_t selected_size_ = 0;
  // Counter `f` of counters_ and of the totals (set_totals) moved by n.
  void count(uint64_t PipelineCounters::*f, uint64_t n = 1) {
    counters_.*f += n;
    if (totals_) totals_->*f += n;
  }
  void gauge(uint32_t PipelineCounters::*f, int32_t d) {
    counters_.*f += d;
    if (totals_) totals_->*f += d;
  }
  PipelineCounters counters_;
  PipelineCounters* totals_ = nullptr;
};

}  // namespace ws::pipeline
