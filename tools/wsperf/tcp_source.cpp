// The TCP source client: --connections connections write the message stream as fast as
// the sockets, --rate, --count and --duration allow, then close and wait for the peer's
// FIN, which says every byte was received.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "tools/wsperf/roles.hpp"
#include "tools/wsperf/run.hpp"

namespace wsperf {
namespace {

struct SourceConn {
  int fd = -1;
  bool connected = false;
  bool shut = false;  // our FIN sent: everything was written
  bool done = false;  // peer closed: everything was received
  uint32_t interest = EPOLLOUT;
  ws::FrameEncoder enc;
  uint64_t quota = kNever;  // messages this connection sends (--count)
  TxBuf out;
  uint64_t written = 0;
  uint64_t sent_messages = 0;

  SourceConn(ws::Framing f, uint32_t size) : enc(f, size) {}
};

class TcpSource {
 public:
  explicit TcpSource(const Options& opt) : opt_(opt), run_(opt), sink_(kIoBytes) {}
  int run();

 private:
  bool open();
  // Pumps the connections that wait for no event; sets busy when one stopped only on
  // its budget of sends, throttled when one waits for rate tokens.
  bool pump_all(uint64_t now, bool& busy, bool& throttled);
  bool pump(size_t i, uint64_t now);
  uint64_t limit(const SourceConn& c, uint64_t now) const;
  void sent(SourceConn& c, size_t bytes, uint64_t now);
  void on_event(const epoll_event& ev, uint64_t now);
  void drain(SourceConn& c, uint64_t now);

  const Options& opt_;
  Run run_;
  std::vector<std::unique_ptr<SourceConn>> conns_;
  std::vector<uint8_t> sink_;
  uint64_t produced_ = 0;  // complete messages produced on all connections (rate tokens)
  bool stopping_ = false;  // duration over: finish the current message, then FIN
  bool failed_ = false;
  bool connect_failed_ = false;
};

int TcpSource::run() {
  if (!run_.begin() || !open()) return 1;
  uint64_t end = 0;
  while (!run_.loop.stop_requested()) {
    const uint64_t now = now_ns();
    if (!stopping_ && now >= run_.deadline) stopping_ = true;
    if (run_.stalled(now, "progress")) {
      failed_ = true;
      break;
    }
    bool busy = false;
    bool throttled = false;
    if (pump_all(now, busy, throttled)) {
      end = now;
      break;
    }
    uint64_t wake = stopping_ ? now + 100000000ull : run_.deadline;
    if (throttled) wake = std::min<uint64_t>(wake, now + 1000000ull);  // rate tokens: 1 ms steps
    if (busy) wake = now;
    run_.poll(wake, [&](const epoll_event& ev, uint64_t t) { on_event(ev, t); });
    if (connect_failed_) return 1;
  }
  if (end == 0) end = now_ns();
  for (auto& c : conns_) close_fd(c->fd);
  return run_.finish(run_.start, end, nullptr, failed_);
}

bool TcpSource::open() {
  const uint32_t size = static_cast<uint32_t>(opt_.message_size);
  for (unsigned i = 0; i < opt_.connections; ++i) {
    auto c = std::make_unique<SourceConn>(opt_.framing, size);
    if (opt_.count > 0)
      c->quota = opt_.count / opt_.connections + (i < opt_.count % opt_.connections);
    c->fd = start_connect(run_, i);
    if (c->fd < 0) return false;
    conns_.push_back(std::move(c));
  }
  return true;
}

// True when every connection is done.
bool TcpSource::pump_all(uint64_t now, bool& busy, bool& throttled) {
  bool all_done = true;
  for (size_t i = 0; i < conns_.size(); ++i) {
    SourceConn& c = *conns_[i];
    // Connections not waiting for EPOLLOUT are pumped every round: that is
    // how the rate limiter and the deadline take effect without events.
    if (c.connected && !c.shut && (c.interest & EPOLLOUT) == 0) {
      if (pump(i, now)) {
        busy = true;
      } else if (!c.shut && (c.interest & EPOLLOUT) == 0) {
        throttled = true;
      }
    }
    all_done = all_done && c.done;
  }
  return all_done;
}

// The number the connection's messages may reach before the next send: its quota,
// --send-messages, the end of the current message once stopping, and the rate tokens.
uint64_t TcpSource::limit(const SourceConn& c, uint64_t now) const {
  const uint64_t current = c.enc.messages() + (c.enc.at_boundary() ? 0 : 1);
  uint64_t limit = c.quota;
  if (opt_.send_messages != 0) limit = std::min(limit, current + opt_.send_messages);
  if (stopping_) limit = std::min(limit, current);
  if (opt_.rate > 0) {
    // Tokens are whole messages since the start; a message is paid for
    // when it is completely produced.
    const auto allowed =
        static_cast<uint64_t>(opt_.rate * static_cast<double>(now - run_.start) / 1e9) + 1;
    const uint64_t avail = allowed > produced_ ? allowed - produced_ : 0;
    limit = std::min(limit, c.enc.messages() + avail);
  }
  return limit;
}

// Writes as much as the socket, the quota, the rate and the deadline allow.
// Returns true when it stopped only because its budget of sends ran out:
// a sink that keeps up never makes send() fail, and the deadline, the
// progress line and the other connections must still get their turn.
bool TcpSource::pump(size_t i, uint64_t now) {
  SourceConn& c = *conns_[i];
  if (!c.connected || c.shut) return false;
  for (int sends = 0;; ++sends) {
    if (sends == 16) return true;
    if (c.out.drained()) {
      const uint64_t before = c.enc.messages();
      const bool any = c.out.refill(c.enc, limit(c, now));
      produced_ += c.enc.messages() - before;
      if (!any) break;
    }
    const ssize_t w = c.out.send_to(c.fd);
    if (w == 0) {
      want_events(run_.loop, c.fd, c.interest, EPOLLIN | EPOLLOUT, i);
      return false;
    }
    if (w < 0) {
      std::fprintf(stderr, "wsperf: send: %s\n", std::strerror(errno));
      failed_ = true;
      c.shut = c.done = true;
      return false;
    }
    sent(c, static_cast<size_t>(w), now);
  }
  want_events(run_.loop, c.fd, c.interest, EPOLLIN, i);
  // Nothing left to produce and everything written: send our FIN and wait
  // for the peer's, which says every byte was received.
  const bool finished = c.enc.messages() >= c.quota || (stopping_ && c.enc.at_boundary());
  if (finished && c.out.drained()) {
    shutdown(c.fd, SHUT_WR);
    c.shut = true;
  }
  return false;
}

// A message counts as sent once its last byte is in the socket.
void TcpSource::sent(SourceConn& c, size_t bytes, uint64_t now) {
  Counters& k = run_.k;
  c.written += bytes;
  run_.last_progress = now;
  const uint64_t m = c.written / c.enc.frame_bytes();
  k.messages += m - c.sent_messages;
  k.bytes += opt_.framing == ws::Framing::kNone ? bytes : (m - c.sent_messages) * opt_.message_size;
  k.stream_bytes += bytes;
  c.sent_messages = m;
}

void TcpSource::on_event(const epoll_event& ev, uint64_t now) {
  const size_t i = ev.data.u64;
  SourceConn& c = *conns_[i];
  if (c.done || connect_failed_) return;
  if (!c.connected) {
    if (!connect_succeeded(c.fd, opt_)) {
      connect_failed_ = true;
      return;
    }
    c.connected = true;
    ++run_.k.connections;
    want_events(run_.loop, c.fd, c.interest, EPOLLIN, i);
    run_.last_progress = now;
    pump(i, now);
    return;
  }
  if ((ev.events & EPOLLIN) != 0) drain(c, now);
  if (!c.done && (ev.events & EPOLLOUT) != 0) {
    want_events(run_.loop, c.fd, c.interest, EPOLLIN, i);
    pump(i, now);  // a budget left over is used in the next round
  }
}

// Whatever the peer sends (an echo) is read and dropped; EOF after our FIN means the
// peer has everything.
void TcpSource::drain(SourceConn& c, uint64_t now) {
  for (int reads = 0; reads < 16; ++reads) {
    const ssize_t r = recv(c.fd, sink_.data(), sink_.size(), 0);
    if (r > 0) continue;
    if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      if (!c.shut || r < 0) failed_ = true;
      c.done = c.shut = true;
      run_.loop.del(c.fd);
      run_.last_progress = now;
    }
    break;
  }
}

}  // namespace

int run_tcp_source(const Options& opt) { return TcpSource(opt).run(); }

}  // namespace wsperf
