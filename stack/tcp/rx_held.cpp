// Received payload held by reference (rx_held.hpp): keeping, reading, copying out.
#include <algorithm>

#include "stack/tcp/tcb.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws::tcp {

bool Tcb::hold_rx(const PacketView& p) {
  // Only behind what is already held: bytes in the ring (copied) or out of order
  // would have to come first.
  if (p.holder() == nullptr || p.empty() || rcvbuf.size() != 0 || !ooo.empty()) return false;
  HeldPool& pool = stack.held_pool();
  uint32_t i = pool.take();
  if (i == kNoPiece) return false;
  HeldPiece& h = pool.at(i);
  size_t n = p.pieces(h.segs);
  if (n == 0) {
    pool.give(i);
    return false;
  }
  if (!p.holder()->retain(p.frame())) {
    pool.give(i);
    ++stack.ctr().rx_hold_refused;
    return false;
  }
  h.holder = p.holder();
  h.frame = p.frame();
  h.n = static_cast<uint8_t>(n);
  h.cur = 0;
  if (held_last == kNoPiece) {
    held_first = i;
  } else {
    pool.at(held_last).next = i;
  }
  held_last = i;
  held_bytes += p.size();
  stack.tally().held += p.size();
  stack.note_holder(this);
  return true;
}

// Gives the front piece back to its owner.
static void pop_piece(Tcb& t) {
  HeldPool& pool = t.stack.held_pool();
  uint32_t i = t.held_first;
  HeldPiece& h = pool.at(i);
  h.holder->release(h.frame);
  t.held_first = h.next;
  pool.give(i);
  if (t.held_first == kNoPiece) {
    t.held_last = kNoPiece;
    t.stack.forget_holder(&t);
  }
}

void Tcb::drop_held_pieces() {
  while (held_first != kNoPiece) pop_piece(*this);
  stack.tally().held -= held_bytes;
  held_bytes = 0;
}

void Tcb::compact_held() {
  if (held_first == kNoPiece) return;
  // The window counted held bytes with the ring's, so the ring has room for them in
  // front of its head (out-of-order bytes behind the end keep their places).
  if (rcvbuf.capacity() - rcvbuf.size() < held_bytes) return;
  rcvbuf.prepend(held_bytes);
  size_t off = 0;
  HeldPool& pool = stack.held_pool();
  for (uint32_t i = held_first; i != kNoPiece; i = pool.at(i).next) {
    const HeldPiece& h = pool.at(i);
    for (size_t k = h.cur; k < h.n; ++k) {
      rcvbuf.write_at(off, h.segs[k]);
      off += h.segs[k].size();
    }
  }
  stack.ctr().rx_held_compacted += held_bytes;
  drop_held();
}

// Offers held bytes to on_data, in order; false when the application left some.
bool deliver_held(Tcb& t, Instant now) {
  HeldPool& pool = t.stack.held_pool();
  while (t.held_first != kNoPiece && t.cb.on_data && !t.released) {
    HeldPiece& h = pool.at(t.held_first);
    auto& seg = h.segs[h.cur];
    if (seg.empty()) {  // (pieces() leaves none, but a fully read one advances here)
      if (++h.cur == h.n) pop_piece(t);
      continue;
    }
    const size_t len = seg.size();
    size_t n = std::min(t.cb.on_data(t, seg), len);
    if (t.released) return false;
    // on_data may have closed the connection, which drops what is held.
    if (t.held_first == kNoPiece) return true;
    HeldPiece& again = pool.at(t.held_first);
    again.segs[again.cur] = again.segs[again.cur].subspan(n);
    t.held_bytes -= n;
    t.stack.tally().held -= n;
    t.autotune_on_consume(n, now);
    if (n < len) return false;
    if (++again.cur == again.n) pop_piece(t);
  }
  return true;
}

void TcpStack::note_holder(Tcb* t) {
  if (t->holder_index != kNoPiece) return;
  t->holder_index = static_cast<uint32_t>(holders_.size());
  holders_.push_back(t);  // reserved: at most one entry per held piece
}

void TcpStack::forget_holder(Tcb* t) {
  uint32_t k = t->holder_index;
  if (k == kNoPiece) return;
  Tcb* last = holders_.back();
  holders_[k] = last;
  last->holder_index = k;
  holders_.pop_back();
  t->holder_index = kNoPiece;
}

size_t TcpStack::release_held() {
  size_t before = held_pool_.in_use();
  // Backwards: a connection that gives everything back leaves the list, and the
  // last entry (already visited) takes its place.
  for (size_t k = holders_.size(); k-- > 0;) {
    if (k < holders_.size()) holders_[k]->compact_held();
  }
  return before - held_pool_.in_use();
}

}  // namespace ws::tcp
