// Buffer right-sizing (never clamp the receive window by a fixed buffer, docs/tcp.md;
// Linux tcp_rcv_space_adjust and tcp_sndbuf_expand). Buffers grow here, at most once
// per receiver RTT, never on the per-segment path; they shrink only by being freed. The
// send buffer's step after each ACK is inline (Tcb::autotune_send, tcp_stack.hpp).
#include <algorithm>

#include "stack/tcp/tcb.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws::tcp {

// Once per receiver RTT (the handshake and data RTTs are known on both ends).
void Tcb::autotune_rcv_space(Instant now) {
  const auto& cfg = stack.config();
  // A fixed buffer (tcp.recv_buffer) is not tuned.
  if (cfg.recv_buffer == 0 && copied > rcv_space && !pressured) {
    // About twice what the application consumed per RTT plus headroom for
    // reordering, so the sender is never window-limited by us.
    uint64_t target = 2 * copied + 16ull * our_mss;
    // A sender in slow start doubles its rate each RTT: this measurement is already an RTT
    // old, so twice the growth ratio is added (as Linux tcp_rcv_space_adjust). Without
    // it the window only just keeps up with a clean slow start, and the bytes held behind
    // a hole close it (a Linux sender over a 40 ms lossy path sat rwnd-limited 29 % of
    // the time).
    if (rcv_space > 0) target += 2 * target * (copied - rcv_space) / rcv_space;
    rcv_space = static_cast<uint32_t>(std::min<uint64_t>(copied, UINT32_MAX));
    target = std::min<uint64_t>({target, cfg.buffer_max, max_window()});
    if (target > rcvbuf.capacity()) {
      size_t keep = rcvbuf.size();
      if (!ooo.empty()) keep += static_cast<size_t>(ooo[ooo.count() - 1].right - rcv_nxt);
      rcvbuf.resize(static_cast<size_t>(target), keep);
      rcv_buf_target = static_cast<uint32_t>(target);
      rcv_growing_until = now + rcv_space_rtt() * 2;
    }
  }
  copied = 0;
  rcv_space_time = now;
}

}  // namespace ws::tcp
