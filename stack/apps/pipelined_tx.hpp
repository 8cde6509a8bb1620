// One TCP connection's transmit side on the batch pipeline (docs/pipeline.md, "Services on
// the pipeline"): a service pushes whole messages into the TxPipeline, and step() is the TX
// step that moves what the pipeline releases into Connection::send.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "stack/codec/framing.hpp"
#include "stack/core/time.hpp"
#include "stack/pipeline/tx_pipeline.hpp"
#include "stack/tcp/api.hpp"

namespace ws {

class PipelinedTx {
 public:
  explicit PipelinedTx(const pipeline::PipelineParams& p) : pl_(p) {}

  pipeline::TxPipeline& pipeline() { return pl_; }
  const pipeline::TxPipeline& pipeline() const { return pl_; }

  // The TX step. The MSS is read on every step because it changes after the handshake and
  // with the path MTU (RFC 1191); in flight is what TCP holds unacknowledged, so the
  // pipeline enters batching mode when more than one batch is queued downstream. Returns
  // the stream bytes TCP accepted.
  // With nothing queued there is nothing to release: the MSS and in-flight figures matter
  // then only to the next push, whose caller takes them (sync). A round trip's several
  // steps and a client's walk over connections awaiting their echo cost a compare each.
  size_t step(tcp::Connection& c, Instant now) {
    if (pl_.queued_bytes() == 0) return 0;
    sync(c);
    if (pl_.poll(now) > now) return 0;
    bool short_send = false;
    const size_t n = pl_.drain(now, [&](std::span<const uint8_t> s) {
      const size_t k = c.send(s);
      short_send = k < s.size();
      return k;
    });
    // A short send arms on_writable (api.hpp); until it fires, pulling again is pointless.
    blocked_ = short_send;
    return n;
  }
  // The MSS and what TCP holds unacknowledged, for the pipeline's batch size and batching
  // decisions: before anything is pushed or sized after batch_limit().
  void sync(tcp::Connection& c) {
    pl_.set_mss(c.send_mss());
    pl_.set_in_flight(c.send_queued());
  }
  // The producer side (docs/pipeline.md, "Writing into the send ring"): up to `count`
  // messages of `size` bytes, numbered from `first`, message i written by
  // `fill(i, offset, out)`. First the rest of a message cut earlier (write_kept), then the
  // TX step; then, while nothing queued must go first, straight into TCP's send ring
  // (push_bulk_direct: no batch, no copy; the message cut where the room ends keeps its
  // rest for write_kept); the rest into the pipeline while it holds less than `queue_high`
  // bytes, unless the direct path stopped for room (then on_writable follows, and the
  // messages are better made then, in place, than queued and copied). Returns the messages
  // accepted; `sent` gets the stream bytes TCP took.
  template <class Fill>
  pipeline::BulkPushResult push_bulk(tcp::Connection& c, uint64_t first, uint64_t count,
                                     uint32_t size, Instant now, uint64_t queue_high, size_t& sent,
                                     Fill&& fill) {
    sync(c);
    sent = write_kept(c, fill);
    sent += step(c, now);
    pipeline::BulkPushResult r;
    if (blocked_ || count == 0) return r;
    const auto numbered = [&fill, first](uint64_t i, uint64_t off, std::span<uint8_t> out) {
      fill(first + i, off, out);
    };
    if (count == 1 && pl_.push_one_direct(
                          size, pipeline::Priority::kData, now, numbered,
                          [&c](size_t max) { return c.send_reserve(max); },
                          [&c](size_t n) { return c.send_commit(n); })) {
      r.accepted = 1;
      sent += kFrameHeaderBytes + size_t{size};
      r.notify = pl_.poll(now) <= now;
      return r;
    }
    const DirectEnd end = direct_chunks(c, first, count, size, now, r, sent, fill);
    if (end == DirectEnd::kRestLeft) return r;
    // Short of room, on_writable is armed (the reserve asked for more than there was), and
    // the messages are better made then, in place, than queued and copied: when the direct
    // path took some, or TCP holds two batches or more to send meanwhile. With less (a send
    // buffer smaller than a batch, or one just drained) they are queued, for the TX step to
    // feed TCP from.
    if (end == DirectEnd::kRoomShort &&
        (r.accepted > 0 || c.send_queued() >= 2 * uint64_t{pl_.batch_limit()})) {
      blocked_ = true;
      return r;
    }
    const uint64_t queued = pl_.queued_bytes();
    if (r.accepted < count && queued < queue_high) {
      const uint64_t frame = kFrameHeaderBytes + uint64_t{size};
      const uint64_t want = std::min(count - r.accepted, (queue_high - queued) / frame + 1);
      const uint64_t base = first + r.accepted;
      const pipeline::BulkPushResult b =
          pl_.push_bulk(want, size, pipeline::Priority::kData, now,
                        [&fill, base](uint64_t i, uint64_t off, std::span<uint8_t> out) {
                          fill(base + i, off, out);
                        });
      r.accepted += b.accepted;
      r.status = b.status;
      // What the TX step may take of them now (outside batching mode: all of it).
      sent += step(c, now);
    }
    r.notify = pl_.poll(now) <= now;
    return r;
  }

  // The rest of the message push_bulk cut, as much as TCP's send ring takes now, written
  // in place by the same `fill` (message number, offset, out). While any is left the
  // connection counts as blocked (the short reserve armed on_writable) and nothing else is
  // pushed or pulled: the rest comes next in the stream. Returns the stream bytes TCP took.
  template <class Fill>
  size_t write_kept(tcp::Connection& c, Fill& fill) {
    if (kept_.left == 0) return 0;
    const uint64_t msg = kept_.msg;
    const uint64_t n = pl_.write_kept(
        kept_.size, kept_.from, kept_.left,
        [&fill, msg](uint64_t off, std::span<uint8_t> out) { fill(msg, off, out); },
        [&c](size_t max) { return c.send_reserve(max); },
        [&c](size_t k) { return c.send_commit(k); });
    kept_.from += n;
    kept_.left -= n;
    blocked_ = kept_.left != 0;
    return static_cast<size_t>(n);
  }
  // push_bulk's direct path: chunks while they apply, each frame cut at a chunk's end
  // written in place after it while the ring has room (a batching-mode chunk ends at a
  // batch boundary, not where the room ends). Says why it stopped: a rest left (blocked
  // until on_writable), the last chunk short of room, or neither.
  enum class DirectEnd : uint8_t { kDone, kRoomShort, kRestLeft };
  template <class Fill>
  DirectEnd direct_chunks(tcp::Connection& c, uint64_t first, uint64_t count, uint32_t size,
                          Instant now, pipeline::BulkPushResult& r, size_t& sent, Fill& fill) {
    for (;;) {
      const uint64_t base = first + r.accepted;
      const pipeline::DirectResult d = pl_.push_bulk_direct(
          count - r.accepted, size, pipeline::Priority::kData, now,
          [&fill, base](uint64_t i, uint64_t off, std::span<uint8_t> out) {
            fill(base + i, off, out);
          },
          [&c](size_t max) { return c.send_reserve(max); },
          [&c](size_t n) { return c.send_commit(n); }, pipeline::CutRest::kKeep);
      r.accepted += d.accepted;
      sent += static_cast<size_t>(d.committed);
      if (d.kept == 0) return d.room_short ? DirectEnd::kRoomShort : DirectEnd::kDone;
      kept_ = {first + r.accepted - 1, kFrameHeaderBytes + uint64_t{size} - d.kept, d.kept, size};
      sent += write_kept(c, fill);
      if (kept_.left != 0) return DirectEnd::kRestLeft;
      if (r.accepted == count) return DirectEnd::kDone;
    }
  }

  // Stream bytes accepted and not yet in TCP: queued in the pipeline or a cut message's
  // rest. A FIN waits for zero.
  uint64_t pending_bytes() const { return pl_.queued_bytes() + kept_.left; }

  // push_frames for the echo: the TX step, then the run of whole frames, straight into
  // TCP's send ring where the pipeline would release them at once
  // (push_frames_direct), the rest queued; then the TX step again. `sent` gets the
  // stream bytes TCP took. The caller has sized the run after a sync() and let TCP take
  // nothing since (its figures are the ones the pipeline decides with): an echo's reply
  // then costs one sync, not two.
  pipeline::BulkPushResult push_frames(tcp::Connection& c, std::span<const uint8_t> run,
                                       Instant now, size_t& sent) {
    sent = step(c, now);
    uint64_t committed = 0;
    pipeline::BulkPushResult r;
    if (blocked_) {
      r = pl_.push_frames(run, pipeline::Priority::kData, now);
    } else {
      r = pl_.push_frames_direct(
          run, pipeline::Priority::kData, now, [&c](size_t max) { return c.send_reserve(max); },
          [&c](size_t n) { return c.send_commit(n); }, committed);
    }
    sent += static_cast<size_t>(committed) + step(c, now);
    return r;
  }

  // For the next connection of the same owner: the pipeline as new, its spare batches kept
  // (no allocation per connection under churn).
  void reset() {
    pl_.reset();
    blocked_ = false;
    kept_ = {};
  }
  // on_writable: TCP has room again.
  void writable() { blocked_ = false; }
  bool blocked() const { return blocked_; }

  // When the service should run step() next: the pipeline's deadline, except while TCP is
  // full (a pull would take nothing and the deadline stays in the past: on_writable resumes
  // instead of a spinning poll).
  Instant deadline(Instant now) const { return blocked_ ? Instant::never() : pl_.poll(now); }

 private:
  // The frame push_bulk_direct cut (CutRest::kKeep): message `msg`, frame bytes from `from`
  // on, `left` of them still to write.
  struct Kept {
    uint64_t msg = 0;
    uint64_t from = 0;
    uint64_t left = 0;
    uint32_t size = 0;
  };

  pipeline::TxPipeline pl_;
  Kept kept_;
  bool blocked_ = false;
};

}  // namespace ws
