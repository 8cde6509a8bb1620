// A PacketIo over heap buffers for unit and simulation tests.
//
// FakePacketIo hands out buffers from a fixed-size pool (so alloc_tx fails like a
// drained mempool), records every transmitted frame byte for byte, and tracks each
// buffer from alloc_tx to transmit() or release(). A buffer that is returned twice,
// returned although it was never handed out, or still outstanding when the fake is
// destroyed is reported as a GoogleTest failure: the stack must never leak a buffer.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "stack/core/packet.hpp"

namespace ws::test {

// One transmitted frame and the offload requests that came with it.
struct SentFrame {
  std::vector<uint8_t> bytes;
  uint32_t flags = 0;  // TxFlag bits
  uint16_t l2_len = 0;
  uint16_t l3_len = 0;
  uint16_t l4_len = 0;
  uint16_t tso_segsz = 0;
};

// Applies the checksum offloads a NIC would (kTxIpv4Cksum, kTxUdpCksum, kTxTcpCksum)
// to a recorded frame in place: what the peer would see on the wire.
void complete_tx_offloads(SentFrame& f);

class FakePacketIo final : public PacketIo {
 public:
  struct Options {
    uint32_t pool_size = 256;       // buffers in the pool
    uint32_t data_room = 2048;      // capacity of each buffer
    TxOffloads offloads{};          // what tx_offloads() reports
    uint32_t max_frame_len = 1514;  // what max_frame_len() reports
    bool apply_offloads = false;    // finish offloaded checksums when recording frames
    bool fill_garbage = true;       // fill fresh buffers with 0xa5 to catch unwritten bytes
    bool check_leaks_on_destroy = true;
    // alloc_tx_gather: when nonzero, a frame longer than `gather_first` bytes is
    // handed out as a chain of buffers, `gather_first` bytes in the first and
    // `gather_segment` in each further one (the last holds the rest), each
    // taking one buffer of the pool. Odd sizes put segment boundaries at odd
    // offsets. 0: one contiguous buffer (the PacketIo default).
    uint32_t gather_first = 0;
    uint32_t gather_segment = 0;
  };

  FakePacketIo() : FakePacketIo(Options{}) {}
  explicit FakePacketIo(Options o) : opt_(o) {
    slots_.resize(opt_.pool_size);
    for (auto& s : slots_) s.mem = std::make_unique<uint8_t[]>(opt_.data_room);
  }
  ~FakePacketIo() override {
    if (opt_.check_leaks_on_destroy) {
      EXPECT_EQ(outstanding(), 0u) << "FakePacketIo destroyed with buffers neither sent nor "
                                      "released (leak)";
    }
  }
  FakePacketIo(const FakePacketIo&) = delete;
  FakePacketIo& operator=(const FakePacketIo&) = delete;

  // PacketIo
  bool alloc_tx(uint32_t len, TxBuf& out) override {
    ++alloc_calls_;
    if (len > opt_.data_room || in_use_ >= limit()) {
      ++alloc_failures_;
      return false;
    }
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& s = slots_[i];
      if (s.in_use) continue;
      s.in_use = true;
      ++in_use_;
      if (opt_.fill_garbage) std::memset(s.mem.get(), 0xa5, opt_.data_room);
      out = TxBuf{};
      out.data = s.mem.get();
      out.capacity = opt_.data_room;
      out.handle = &s;
      return true;
    }
    ++alloc_failures_;
    return false;
  }

  bool alloc_tx_gather(uint32_t len, uint32_t head, TxBuf& out) override {
    if (opt_.gather_first == 0 || len <= opt_.gather_first) return alloc_tx(len, out);
    ++gather_calls_;
    if (head > opt_.gather_first || opt_.gather_segment == 0 ||
        std::max(opt_.gather_first, opt_.gather_segment) > opt_.data_room) {
      ++alloc_failures_;
      return false;
    }
    TxBuf first;
    if (!alloc_tx(opt_.gather_first, first)) return false;
    auto* s = static_cast<Slot*>(first.handle);
    uint32_t left = len - opt_.gather_first;
    while (left > 0) {
      TxBuf more;
      if (!alloc_tx(opt_.gather_segment, more)) {
        // The pool ran dry mid-chain: give back what was taken, refuse the frame.
        for (Slot* t : s->tail) free_slot(t);
        s->tail.clear();
        s->segs.clear();
        free_slot(s);
        return false;
      }
      uint32_t n = std::min(left, opt_.gather_segment);
      s->tail.push_back(static_cast<Slot*>(more.handle));
      s->segs.push_back(TxSeg{more.data, n});
      left -= n;
    }
    out = first;
    out.capacity = opt_.gather_first;
    out.segs = s->segs.data();
    out.nsegs = static_cast<uint16_t>(s->segs.size());
    ++gathered_;
    return true;
  }

  bool transmit(TxBuf& buf) override {
    std::vector<TxSeg> segs;
    if (auto* h = static_cast<Slot*>(buf.handle); owns(h)) segs = h->segs;
    Slot* s = take(buf, "transmit");
    if (s == nullptr) return false;
    if (tx_ring_full_) {
      ++tx_dropped_;
      return false;
    }
    SentFrame f;
    if (segs.empty()) {
      EXPECT_LE(buf.len, buf.capacity) << "frame longer than its buffer";
      f.bytes.assign(buf.data, buf.data + std::min(buf.len, buf.capacity));
    } else {
      f.bytes.assign(buf.data, buf.data + buf.capacity);
      for (const TxSeg& g : segs) f.bytes.insert(f.bytes.end(), g.data, g.data + g.len);
      EXPECT_EQ(f.bytes.size(), buf.len) << "a gathered frame fills its segments exactly";
    }
    f.flags = buf.flags;
    f.l2_len = buf.l2_len;
    f.l3_len = buf.l3_len;
    f.l4_len = buf.l4_len;
    f.tso_segsz = buf.tso_segsz;
    if (opt_.apply_offloads) complete_tx_offloads(f);
    sent_.push_back(std::move(f));
    return true;
  }

  void release(TxBuf& buf) override {
    if (take(buf, "release") != nullptr) ++releases_;
  }

  TxOffloads tx_offloads() const override { return opt_.offloads; }
  uint32_t max_frame_len() const override { return opt_.max_frame_len; }
  uint32_t free_buffers() const override { return limit() - in_use_; }

  // --- test controls ---
  // Caps the buffers that may be outstanding at once (<= pool_size); 0 = pool empty.
  void set_available(uint32_t n) { cap_ = std::min<uint32_t>(n, opt_.pool_size); }
  void restore_pool() { cap_ = opt_.pool_size; }
  // While set, transmit() drops every frame (returns false, buffer freed, counted).
  void set_tx_ring_full(bool full) { tx_ring_full_ = full; }

  // --- observations ---
  const std::vector<SentFrame>& sent() const { return sent_; }
  size_t sent_count() const { return sent_.size(); }
  // Bytes of every frame transmitted so far, oldest first.
  std::vector<std::vector<uint8_t>> frames() const {
    std::vector<std::vector<uint8_t>> v;
    v.reserve(sent_.size());
    for (const auto& f : sent_) v.push_back(f.bytes);
    return v;
  }
  // Returns and forgets the recorded frames.
  std::vector<SentFrame> take_sent() {
    std::vector<SentFrame> v;
    v.swap(sent_);
    return v;
  }
  void clear_sent() { sent_.clear(); }

  uint32_t outstanding() const { return in_use_; }  // allocated, not yet sent or released
  uint64_t alloc_calls() const { return alloc_calls_; }
  uint64_t alloc_failures() const { return alloc_failures_; }
  uint64_t gather_calls() const { return gather_calls_; }  // chains asked for
  uint64_t gathered() const { return gathered_; }          // chains handed out
  uint64_t releases() const { return releases_; }
  uint64_t tx_dropped() const { return tx_dropped_; }
  uint64_t bad_returns() const { return bad_returns_; }
  // No buffer outstanding and none returned twice or from elsewhere.
  ::testing::AssertionResult no_leaks() const {
    if (in_use_ != 0 || bad_returns_ != 0) {
      return ::testing::AssertionFailure()
             << in_use_ << " buffer(s) outstanding, " << bad_returns_ << " bad return(s)";
    }
    return ::testing::AssertionSuccess();
  }

 private:
  struct Slot {
    std::unique_ptr<uint8_t[]> mem;
    bool in_use = false;
    std::vector<Slot*> tail;  // a gathered frame's further buffers
    std::vector<TxSeg> segs;  // and the segment list lent with it
  };

  bool owns(const Slot* s) const {
    for (const auto& slot : slots_)
      if (&slot == s) return true;
    return false;
  }
  void free_slot(Slot* s) {
    s->in_use = false;
    --in_use_;
  }

  uint32_t limit() const { return std::min<uint32_t>(cap_, opt_.pool_size); }

  Slot* take(TxBuf& buf, const char* what) {
    auto* s = static_cast<Slot*>(buf.handle);
    bool ours = false;
    for (auto& slot : slots_) ours |= (&slot == s);
    if (!ours || !s->in_use || buf.data != s->mem.get()) {
      ++bad_returns_;
      ADD_FAILURE() << what << "() of a buffer that is not outstanding (double free or foreign)";
      return nullptr;
    }
    for (Slot* t : s->tail) free_slot(t);
    s->tail.clear();
    s->segs.clear();
    free_slot(s);
    return s;
  }

  Options opt_;
  std::vector<Slot> slots_;
  uint32_t cap_ = UINT32_MAX;
  uint32_t in_use_ = 0;
  uint64_t alloc_calls_ = 0;
  uint64_t alloc_failures_ = 0;
  uint64_t gather_calls_ = 0;
  uint64_t gathered_ = 0;
  uint64_t releases_ = 0;
  uint64_t tx_dropped_ = 0;
  uint64_t bad_returns_ = 0;
  bool tx_ring_full_ = false;
  std::vector<SentFrame> sent_;
};

}  // namespace ws::test
