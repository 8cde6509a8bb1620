// The TCP ping client: each of --connections connections has one request out at a time
// and times its round trip (with --reconnect, a new connection per round trip, the
// handshake included).
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <vector>

#include "tools/wsperf/roles.hpp"
#include "tools/wsperf/run.hpp"
#include "tools/wsperf/rx_check.hpp"

namespace wsperf {
namespace {

struct PingConn {
  int fd = -1;
  bool connected = false;
  bool awaiting = false;  // whole request written; waiting for the rest of the reply
  uint32_t interest = EPOLLOUT;
  ws::FrameEncoder enc;
  RxCheck rx;
  TxBuf out;
  uint64_t round = 0;     // round trips completed on this connection
  bool in_round = false;  // a request is out
  uint64_t t0 = 0;

  explicit PingConn(const Options& opt)
      : enc(opt.framing, static_cast<uint32_t>(opt.message_size)), rx(opt) {}
};

class TcpPing {
 public:
  explicit TcpPing(const Options& opt) : opt_(opt), run_(opt), conns_(opt.connections) {
    rbuf_.resize(kIoBytes);
  }
  int run();

 private:
  bool open(size_t i);
  void shut(size_t i);
  bool pump(size_t i);
  bool may_start(uint64_t now) const {
    return now < run_.deadline && (opt_.count == 0 || started_ < opt_.count) &&
           !run_.loop.stop_requested();
  }
  bool begin_round(size_t i, uint64_t now);
  bool rounds_out() const;
  void on_event(const epoll_event& ev, uint64_t now);
  void on_connected(size_t i, uint64_t now);
  // Reads the reply; true once it is complete.
  bool read_reply(size_t i, uint64_t now);
  void round_done(size_t i, uint64_t now);

  const Options& opt_;
  const bool none_ = opt_.framing == ws::Framing::kNone;
  Run run_;
  Histogram rtt_;
  std::vector<std::unique_ptr<PingConn>> conns_;
  std::vector<uint8_t> rbuf_;
  uint64_t started_ = 0;  // round trips begun, for --count
  bool failed_ = false;
  bool fatal_ = false;  // a connect failed: exit 1 without a report
};

int TcpPing::run() {
  if (!run_.begin()) return 1;
  for (size_t i = 0; i < conns_.size(); ++i) {
    if (!open(i)) return 1;
  }
  while (!run_.loop.stop_requested()) {
    const uint64_t now = now_ns();
    if (!rounds_out() && !may_start(now)) break;
    if (now >= run_.deadline) break;  // rounds still out at the deadline are abandoned
    if (run_.stalled(now, "reply")) {
      failed_ = true;
      break;
    }
    run_.poll(run_.deadline, [&](const epoll_event& ev, uint64_t t) { on_event(ev, t); });
    if (fatal_) return 1;
  }
  const uint64_t end = now_ns();
  for (size_t i = 0; i < conns_.size(); ++i) shut(i);
  return run_.finish(run_.start, end, &rtt_, failed_);
}

bool TcpPing::open(size_t i) {
  conns_[i] = std::make_unique<PingConn>(opt_);
  PingConn& c = *conns_[i];
  c.fd = start_connect(run_, i);
  if (c.fd < 0) return false;
  set_nodelay(c.fd);  // one small request at a time: Nagle would add an RTT
  c.t0 = now_ns();    // with --reconnect the round trip includes the handshake
  return true;
}

void TcpPing::shut(size_t i) {
  if (!conns_[i]) return;
  run_.loop.del(conns_[i]->fd);
  close_fd(conns_[i]->fd);
  conns_[i].reset();
}

// Writes the current request. False on a socket error.
bool TcpPing::pump(size_t i) {
  PingConn& c = *conns_[i];
  for (;;) {
    if (c.out.drained() && !c.out.refill(c.enc, c.round + 1)) break;
    const ssize_t w = c.out.send_to(c.fd);
    if (w < 0) return false;
    if (w == 0) {
      want_events(run_.loop, c.fd, c.interest, EPOLLIN | EPOLLOUT, i);
      return true;
    }
  }
  c.awaiting = true;
  want_events(run_.loop, c.fd, c.interest, EPOLLIN, i);
  return true;
}

bool TcpPing::begin_round(size_t i, uint64_t now) {
  PingConn& c = *conns_[i];
  ++started_;
  c.in_round = true;
  c.awaiting = false;
  if (!opt_.reconnect) c.t0 = now;
  return pump(i);
}

bool TcpPing::rounds_out() const {
  for (const auto& c : conns_) {
    if (c && (c->in_round || !c->connected)) return true;
  }
  return false;
}

void TcpPing::on_event(const epoll_event& ev, uint64_t now) {
  const size_t i = ev.data.u64;
  if (fatal_ || i >= conns_.size() || !conns_[i]) return;
  PingConn& c = *conns_[i];
  if (!c.connected) {
    on_connected(i, now);
    return;
  }
  if ((ev.events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0 && read_reply(i, now)) {
    round_done(i, now);
    return;
  }
  if (!conns_[i]) return;
  if ((ev.events & EPOLLOUT) != 0 && !c.awaiting && !pump(i)) {
    failed_ = true;
    shut(i);
  }
}

void TcpPing::on_connected(size_t i, uint64_t now) {
  PingConn& c = *conns_[i];
  if (!connect_succeeded(c.fd, opt_)) {
    fatal_ = true;
    return;
  }
  c.connected = true;
  if (!opt_.reconnect) ++run_.k.connections;
  if (!may_start(now)) {
    shut(i);
  } else if (!begin_round(i, now)) {
    failed_ = true;
  }
}

bool TcpPing::read_reply(size_t i, uint64_t now) {
  PingConn& c = *conns_[i];
  bool done = false;
  for (int reads = 0; reads < 16 && !done; ++reads) {
    const ssize_t r = recv(c.fd, rbuf_.data(), rbuf_.size(), 0);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (r <= 0) {
      std::fprintf(stderr, "wsperf: connection closed by %s in a round trip\n",
                   opt_.addr_text.c_str());
      failed_ = true;
      shut(i);
      return false;
    }
    run_.last_progress = now;
    std::span<const uint8_t> data(rbuf_.data(), static_cast<size_t>(r));
    const uint64_t reply_end = (c.round + 1) * opt_.message_size;
    if (none_) {
      // Framing none: a reply is complete when message_size bytes per
      // round trip have come back.
      const uint64_t want = reply_end - c.rx.dec.stream_bytes();
      if (data.size() > want) data = data.first(static_cast<size_t>(want));
      c.rx.consume(data, opt_, run_.k, [](uint64_t) {});
      done = c.rx.dec.stream_bytes() == reply_end;
      continue;
    }
    // Length32: one request is out, so one reply completes the round.
    c.rx.consume(data, opt_, run_.k, [&](uint64_t length) {
      if (length != opt_.message_size) ++run_.k.verify_errors;
      done = true;
    });
    if (c.rx.failed) {
      failed_ = true;
      shut(i);
      return false;
    }
  }
  return done;
}

void TcpPing::round_done(size_t i, uint64_t now) {
  PingConn& c = *conns_[i];
  rtt_.add(now - c.t0);
  if (none_) ++run_.k.messages;  // length32 replies are counted by RxCheck
  ++c.round;
  c.in_round = false;
  if (opt_.reconnect) {
    ++run_.k.connections;
    shut(i);
    if (may_start(now) && !open(i)) fatal_ = true;
  } else if (may_start(now) && !begin_round(i, now)) {
    failed_ = true;
  }
}

}  // namespace

int run_tcp_ping(const Options& opt) { return TcpPing(opt).run(); }

}  // namespace wsperf
