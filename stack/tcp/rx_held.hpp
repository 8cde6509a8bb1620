// Received payload kept by reference instead of copied (zero-copy receive): when an
// application leaves in-order bytes unread, the segment's buffers (the data plane's
// mbufs) are retained and the bytes read from them later, in order, ahead of
// anything copied into the receive ring. The pieces come from a fixed pool per
// TcpStack; a connection links its pieces in sequence order.
//
// Holding is an optimisation with a copy as the fallback, never a requirement: no
// owner, a pool that is out of pieces, a frame of more than kMaxHeldSegments pieces,
// or an owner that refuses (its buffer pool is running low) means the bytes are
// copied as before. When the owner's pool runs low later, TcpStack::release_held()
// copies what connections hold into their rings and gives the buffers back, so
// held data can never starve the receive path of buffers (which would stop the
// ACKs that let applications drain their sends).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "stack/core/packet_view.hpp"

namespace ws::tcp {

inline constexpr uint32_t kNoPiece = UINT32_MAX;
inline constexpr size_t kMaxHeldSegments = 8;

struct HeldPiece {
  RxHolder* holder = nullptr;
  const void* frame = nullptr;
  std::array<PacketView::Segment, kMaxHeldSegments> segs{};  // unread bytes, segs[cur] on
  uint8_t n = 0;
  uint8_t cur = 0;
  uint32_t next = kNoPiece;  // the connection's next piece, or the next free one
};

class HeldPool {
 public:
  explicit HeldPool(size_t n) : pieces_(n) {
    for (size_t i = 0; i < n; ++i) {
      pieces_[i].next = i + 1 < n ? static_cast<uint32_t>(i + 1) : kNoPiece;
    }
    free_ = n > 0 ? 0 : kNoPiece;
  }
  uint32_t take() {
    uint32_t i = free_;
    if (i == kNoPiece) return i;
    free_ = pieces_[i].next;
    pieces_[i].next = kNoPiece;
    ++in_use_;
    return i;
  }
  void give(uint32_t i) {
    pieces_[i] = HeldPiece{};
    pieces_[i].next = free_;
    free_ = i;
    --in_use_;
  }
  HeldPiece& at(uint32_t i) { return pieces_[i]; }
  size_t in_use() const { return in_use_; }
  size_t size() const { return pieces_.size(); }

 private:
  std::vector<HeldPiece> pieces_;
  uint32_t free_ = kNoPiece;
  size_t in_use_ = 0;
};

}  // namespace ws::tcp
