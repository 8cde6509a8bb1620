// Byte ring buffers for the send and receive queues. Storage grows only at autotune
// steps (resize), never per segment, and is allocated at the first write, not before:
// a connection that never buffered a byte (an idle one) holds none. They hold copies: on receive,
// only the bytes the application did not consume straight from the packet and out-of-order bytes
// (tcp_input.cpp, receive_data); holding mbuf references instead is not done (see docs/tcp.md).
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <utility>

#include "stack/core/packet_view.hpp"
#include "stack/tcp/buffer_tally.hpp"

namespace ws::tcp {

// A contiguous-storage ring: bytes [head, head+size) modulo capacity. A ring bound to
// a RingTally counts its capacity, storage and contents into it at every change; moving
// contents to another ring moves them to that ring's tally (the rings keep their own).
class ByteRing {
 public:
  ByteRing() = default;
  explicit ByteRing(RingTally* t) : tally_(t) {}
  ByteRing(ByteRing&& o) noexcept
      : buf_(std::move(o.buf_)), tally_(o.tally_), cap_(o.cap_), head_(o.head_), size_(o.size_) {
    o.cap_ = o.head_ = o.size_ = 0;  // same tally: nothing to move
  }
  ByteRing& operator=(ByteRing&& o) noexcept {
    if (this == &o) return *this;
    tally(false);
    o.tally(false);
    buf_ = std::move(o.buf_);
    cap_ = std::exchange(o.cap_, 0u);
    head_ = std::exchange(o.head_, 0u);
    size_ = std::exchange(o.size_, 0u);
    tally(true);
    return *this;
  }
  ~ByteRing() { tally(false); }
  // Counts this ring into `t` from now on (and out of its former tally).
  void bind(RingTally* t) {
    tally(false);
    tally_ = t;
    tally(true);
  }

  size_t capacity() const { return cap_; }
  // Bytes of storage allocated: capacity() once anything was written, else 0.
  size_t allocated() const { return buf_ ? cap_ : 0; }
  size_t size() const { return size_; }
  size_t free() const { return cap_ - size_; }

  // Grows (or shrinks, if the contents fit) the storage to `cap` bytes, keeping the
  // contents. Allocates: call only at autotune steps.
  // `keep` (>= size) bytes from the head are preserved, so out-of-order data written
  // past the end survives.
  void resize(size_t cap, size_t keep = 0) {
    keep = std::max<size_t>(keep, size_);
    if (cap == cap_ || cap < keep) return;
    if (keep != 0 && buf_) {
      resize_keeping(cap, keep);
      return;
    }
    // Nothing to keep: the storage comes with the first write.
    tally(false);
    buf_.reset();
    cap_ = static_cast<uint32_t>(cap);
    head_ = 0;
    tally(true);
  }
  // resize() that copies the contents, out of line: inlined, the copy made every caller
  // (a new connection's empty rings, twice per connection) save six registers.
  [[gnu::noinline]] void resize_keeping(size_t cap, size_t keep) {
    tally(false);
    std::unique_ptr<uint8_t[]> n(new uint8_t[cap]);  // default-initialised, as in storage()
    copy_out_raw(0, std::span<uint8_t>(n.get(), keep));
    buf_ = std::move(n);
    cap_ = static_cast<uint32_t>(cap);
    head_ = 0;
    tally(true);
  }
  void release() {
    tally(false);
    buf_.reset();
    cap_ = head_ = size_ = 0;
  }
  // Hands the storage over (contents dropped) and leaves the ring empty, of capacity 0:
  // spare storage is kept as bare buffers, so a connection's turnover moves a pointer
  // instead of a whole ring in and out of a pool (TcpStack::give_ring).
  std::unique_ptr<uint8_t[]> surrender() {
    tally(false);
    cap_ = head_ = size_ = 0;
    return std::move(buf_);
  }
  // Takes `cap` bytes of storage from `b` (from surrender()) into a ring of capacity 0
  // (new, surrendered or released: no storage, nothing counted but its tally binding),
  // leaving `b` empty. Inline and with nothing to uncount: two rings per new connection.
  void adopt(std::unique_ptr<uint8_t[]>& b, size_t cap) {
    assert(cap_ == 0 && !buf_ && size_ == 0);
    buf_.reset(b.release());
    cap_ = static_cast<uint32_t>(cap);
    head_ = 0;
    if (tally_) {
      tally_->capacity += cap;
      tally_->allocated += cap;
    }
  }

  // Appends up to data.size() bytes; returns how many.
  size_t push(std::span<const uint8_t> data) {
    size_t n = std::min(data.size(), free());
    write_at(size_, data.first(n));
    grow_size(n);
    return n;
  }
  // Writes at `off` bytes past the head without changing size (for out-of-order
  // data); off + data.size() must not exceed capacity.
  void write_at(size_t off, std::span<const uint8_t> data) {
    size_t cap = cap_;
    if (cap == 0 || data.empty()) return;
    storage();
    size_t pos = (head_ + off) % cap;
    size_t first = std::min(data.size(), cap - pos);
    std::memcpy(buf_.get() + pos, data.data(), first);
    if (first < data.size()) std::memcpy(buf_.get(), data.data() + first, data.size() - first);
  }
  // The same for a payload spread over several buffers (a chained frame).
  void write_at(size_t off, const PacketView& data) {
    data.for_each([&](std::span<const uint8_t> piece) {
      write_at(off, piece);
      off += piece.size();
    });
  }
  // Writable room for `n` bytes (at most free()) past the end, as one or two
  // runs: the second where the storage wraps. commit() makes them contents.
  std::pair<std::span<uint8_t>, std::span<uint8_t>> tail_room(size_t n) {
    n = std::min(n, free());
    if (n == 0) return {};
    storage();
    size_t pos = (head_ + size_) % cap_;
    size_t first = std::min(n, cap_ - pos);
    return {{buf_.get() + pos, first}, {buf_.get(), n - first}};
  }
  // Marks `n` bytes already written past the end as part of the contents.
  void commit(size_t n) { grow_size(n); }
  void copy_out(size_t off, std::span<uint8_t> out) const { copy_out_raw(off, out); }
  void copy_out_raw(size_t off, std::span<uint8_t> out) const {
    size_t cap = cap_;
    if (cap == 0 || out.empty()) return;
    size_t pos = (head_ + off) % cap;
    size_t first = std::min(out.size(), cap - pos);
    std::memcpy(out.data(), buf_.get() + pos, first);
    if (first < out.size()) std::memcpy(out.data() + first, buf_.get(), out.size() - first);
  }
  // The longest contiguous run starting at `off`, at most `len` bytes.
  std::span<const uint8_t> contiguous(size_t off, size_t len) const {
    size_t cap = cap_;
    if (cap == 0 || off >= size_) return {};
    size_t pos = (head_ + off) % cap;
    size_t n = std::min({len, size_ - off, cap - pos});
    return {buf_.get() + pos, n};
  }
  // Makes room for `n` bytes in front of the head (the storage behind the end,
  // out-of-order bytes included, must leave them free: the receive window counts
  // them); write them with write_at(0, ...). Out-of-order bytes keep their
  // positions relative to the end.
  void prepend(size_t n) {
    if (cap_ == 0 || n == 0) return;
    head_ = (head_ + cap_ - n % cap_) % cap_;
    grow_size(n);
  }
  // pop() for a ring with nothing addressed past its end (the send ring): emptied, it
  // starts again at its first byte, so that small messages sent one at a time keep
  // writing the same cache line instead of a new one of the ring's each time.
  void consume(size_t n) {
    if (n >= size_) {  // emptied: no division for a head that starts again anyway
      if (tally_) tally_->bytes -= size_;
      size_ = 0;
      head_ = 0;
      return;
    }
    pop(n);
  }
  void pop(size_t n) {
    n = std::min<size_t>(n, size_);
    size_ -= n;
    if (tally_) tally_->bytes -= n;
    // The head keeps moving even when empty: out-of-order bytes beyond the end are
    // addressed relative to it.
    head_ = cap_ == 0 ? 0 : (head_ + n) % cap_;
  }

 private:
  // Allocates the storage on first use. Default-initialised: every byte is written before
  // it is read, and zeroing 64 KiB per direction per connection was the largest cost of
  // opening a connection.
  void storage() {
    if (buf_) return;
    buf_.reset(new uint8_t[cap_]);
    if (tally_) tally_->allocated += cap_;
  }
  void grow_size(size_t n) {
    size_ += n;
    if (tally_) tally_->bytes += n;
  }
  // Adds this ring's capacity, storage and contents to its tally, or takes them away.
  void tally(bool add) {
    if (!tally_) return;
    const uint64_t sign = add ? 1 : ~uint64_t{0};  // times -1, modulo 2^64
    tally_->capacity += sign * cap_;
    tally_->allocated += sign * allocated();
    tally_->bytes += sign * size_;
  }

  std::unique_ptr<uint8_t[]> buf_;
  RingTally* tally_ = nullptr;
  // 32-bit: a ring never exceeds TcpConfig's 32-bit buffer sizes, and two rings per
  // connection make this part of every connection's memory.
  uint32_t cap_ = 0;
  uint32_t head_ = 0;
  uint32_t size_ = 0;
};

}  // namespace ws::tcp
