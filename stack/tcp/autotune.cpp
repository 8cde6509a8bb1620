// Buffer right-sizing (never clamp the receive window by a fixed buffer, docs/tcp.md;
// Linux tcp_rcv_space_adjust and tcp_sndbuf_expand). Buffers grow here, at most once
// per receiver RTT, never on the per-segment path; they shrink only by being freed.
#include <algorithm>

#include "stack/tcp/tcb.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws::tcp {

uint32_t Tcb::rcv_window_now() const {
  uint32_t cap = static_cast<uint32_t>(rcvbuf.capacity());
  // What the window field can express (RFC 7323 2.3): 65535 << our shift.
  // Held bytes (rx_held.hpp) count like those in the ring: they are unread data.
  uint32_t free = std::min<uint32_t>(
      cap - static_cast<uint32_t>(std::min<size_t>(rcv_queued(), cap)), max_window());
  int32_t cur_i = rcv_adv - rcv_nxt;
  uint32_t cur = cur_i > 0 ? static_cast<uint32_t>(cur_i) : 0;
  // Under transmit-buffer pressure the right edge stops moving: the window closes as
  // data arrives instead of the stack freezing (recovers when buffers return).
  if (pressured) return std::min(cur, free);
  // Receiver SWS avoidance (RFC 9293 3.8.6.2.2): move the edge in steps of at least
  // min(buffer/2, MSS).
  SeqNum edge = rcv_nxt + free;
  if (edge - rcv_adv < static_cast<int32_t>(std::min(cap / 2, our_mss))) return std::min(cur, free);
  return free;
}

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
    }
  }
  copied = 0;
  rcv_space_time = now;
}

void Tcb::autotune_send(Instant) {
  const auto& cfg = stack.config();
  if (cfg.send_buffer != 0) return;
  // Room for two congestion windows: one in flight, one queued behind it
  // (cf. Linux tcp_sndbuf_expand), and at least the peer's window.
  uint64_t want = std::max<uint64_t>(2ull * cc->cwnd(), snd_wnd);
  want = std::min<uint64_t>(want, cfg.buffer_max);
  if (want > snd_buf_limit) {
    stack.tally().snd_limit += want - snd_buf_limit;
    snd_buf_limit = static_cast<uint32_t>(want);
  }
}

}  // namespace ws::tcp
