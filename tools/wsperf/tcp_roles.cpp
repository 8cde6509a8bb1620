// TCP echo/sink servers and source/ping clients on non-blocking sockets and
// level-triggered epoll. Messages are framed with the shared codec; payloads
// are the deterministic pattern so --verify needs no copy of what was sent.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "stack/apps/framing.hpp"
#include "tools/wsperf/net.hpp"
#include "tools/wsperf/report.hpp"
#include "tools/wsperf/roles.hpp"

namespace wsperf {
namespace {

constexpr size_t kIoBytes = size_t{256} * 1024;
constexpr uint64_t kNever = ~uint64_t{0};
constexpr uint64_t kListenTag = 0;

ws::FrameDecoderConfig decoder_config(const Options& opt) {
  ws::FrameDecoderConfig cfg;
  cfg.framing = opt.framing;
  cfg.max_message_bytes = opt.max_message;
  return cfg;
}

uint64_t seconds_to_ns(double s) { return static_cast<uint64_t>(std::llround(s * 1e9)); }

int exit_status(const Counters& k) { return k.verify_errors + k.protocol_errors > 0 ? 3 : 0; }

// Counts and checks received stream bytes. One verify error per bad message
// (per connection with framing none, where there is one endless message).
struct RxCheck {
  ws::FrameDecoder dec;
  bool bad = false;
  bool failed = false;

  explicit RxCheck(const Options& opt) : dec(decoder_config(opt)) {}

  // For a receiver that needs no event per message (the sink, and the echo, which sends the
  // stream back as it is): length32 frames are counted, and with --verify checked, by
  // FrameDecoder::scan, as the data plane's sink does, so that both sides of a comparison
  // do the same work per message. A verify error is then counted per bad frame, or per bad
  // piece of a frame cut by a read. Framing none goes through consume().
  void count(std::span<const uint8_t> data, const Options& opt, Counters& k) {
    if (dec.config().framing != ws::Framing::kLength32) {
      consume(data, opt, k, [](uint64_t) {});
      return;
    }
    k.stream_bytes += data.size();
    const uint64_t payload_before = dec.payload_bytes();
    const ws::FrameScan r = dec.scan(data, opt.verify);
    k.bytes += dec.payload_bytes() - payload_before;
    k.messages += r.messages;
    k.verify_errors += r.mismatches;
    if (r.error) {
      ++k.protocol_errors;
      failed = true;
      std::fprintf(stderr, "wsperf: a message length above the limit %llu; closing\n",
                   static_cast<unsigned long long>(opt.max_message));
    }
  }

  // `on_complete(length)` runs at every message end.
  template <class OnComplete>
  void consume(std::span<const uint8_t> data, const Options& opt, Counters& k,
               OnComplete&& on_complete) {
    k.stream_bytes += data.size();
    dec.feed(data, [&](const ws::FrameEvent& ev) {
      switch (ev.kind) {
        case ws::FrameEventKind::kPayload:
          k.bytes += ev.data.size();
          if (opt.verify && !bad &&
              ws::check_pattern(ev.message, ev.offset, ev.data) != ev.data.size()) {
            bad = true;
            ++k.verify_errors;
          }
          break;
        case ws::FrameEventKind::kMessageComplete:
          ++k.messages;
          bad = false;
          on_complete(ev.length);
          break;
        case ws::FrameEventKind::kError:
          ++k.protocol_errors;
          failed = true;
          std::fprintf(stderr, "wsperf: message length %llu above the limit %llu; closing\n",
                       static_cast<unsigned long long>(ev.length),
                       static_cast<unsigned long long>(opt.max_message));
          break;
        case ws::FrameEventKind::kNeedMore:
          break;
      }
    });
  }
};

// --- echo / sink ---------------------------------------------------------------

struct ServerConn {
  int fd = -1;
  RxCheck rx;
  // Echo: unsent bytes live in a ring; reading stops while it is full, which
  // is the backpressure bound (--echo-buffer) per connection.
  std::unique_ptr<uint8_t[]> ring;
  size_t cap = 0;
  size_t head = 0;
  size_t len = 0;
  bool eof = false;
  uint32_t interest = 0;

  explicit ServerConn(const Options& opt) : rx(opt) {}
};

}  // namespace

int run_tcp_server(const Options& opt) {
  const bool echo = opt.role == Role::kEcho;
  Loop loop;
  std::string error;
  sockaddr_in bound{};
  const int lfd = loop.init() ? tcp_listen(opt.addr, bound, error) : -1;
  if (lfd < 0 || !loop.add(lfd, EPOLLIN, kListenTag)) {
    std::fprintf(stderr, "wsperf: %s\n", error.empty() ? "epoll setup failed" : error.c_str());
    return 1;
  }
  std::printf("%s: listening on %s (tcp, framing %s)\n", role_name(opt.role),
              endpoint_text(bound).c_str(),
              opt.framing == ws::Framing::kNone ? "none" : "length32");
  std::fflush(stdout);

  Counters k;
  Reporter reporter(opt);
  const uint64_t start = now_ns();
  reporter.start(start);
  const uint64_t deadline = opt.duration_s > 0 ? start + seconds_to_ns(opt.duration_s) : kNever;
  uint64_t first = 0;
  uint64_t last = 0;
  std::vector<std::unique_ptr<ServerConn>> conns;  // slot i has tag i + 1
  std::vector<size_t> free_slots;
  std::vector<uint8_t> buf(kIoBytes);

  auto close_conn = [&](size_t slot) {
    ServerConn& c = *conns[slot];
    if (c.rx.dec.in_message()) ++k.truncated;
    loop.del(c.fd);
    close_fd(c.fd);
    conns[slot].reset();
    free_slots.push_back(slot);
  };
  auto set_interest = [&](size_t slot) {
    ServerConn& c = *conns[slot];
    uint32_t want = 0;
    if (!c.eof && (!echo || c.len < c.cap)) want |= EPOLLIN;
    if (c.len > 0) want |= EPOLLOUT;
    if (want != c.interest) {
      loop.mod(c.fd, want, slot + 1);
      c.interest = want;
    }
  };
  // Echo: sends what the ring holds. False when the connection is gone.
  auto flush = [&](ServerConn& c) {
    while (c.len > 0) {
      const size_t n = std::min(c.len, c.cap - c.head);
      const ssize_t w = send(c.fd, c.ring.get() + c.head, n, MSG_NOSIGNAL);
      if (w < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
      c.head = (c.head + static_cast<size_t>(w)) % c.cap;
      c.len -= static_cast<size_t>(w);
    }
    c.head = 0;  // empty: restart at the front so reads get the largest piece
    return true;
  };
  auto on_rx = [&](size_t n) {
    const uint64_t t = now_ns();
    if (first == 0) first = t;
    last = t;
    (void)n;
  };

  // Returns false when the connection must be closed.
  auto serve = [&](size_t slot, uint32_t events) {
    ServerConn& c = *conns[slot];
    if ((events & EPOLLIN) != 0 && !c.eof) {
      // A bounded number of reads per wakeup keeps many connections fair.
      for (int i = 0; i < 16; ++i) {
        uint8_t* dst = buf.data();
        size_t room = buf.size();
        if (echo) {
          if (c.len == c.cap) break;
          const size_t tail = (c.head + c.len) % c.cap;
          dst = c.ring.get() + tail;
          room = std::min(c.cap - c.len, c.cap - tail);
        }
        const ssize_t r = recv(c.fd, dst, room, 0);
        if (r == 0) {
          c.eof = true;
          break;
        }
        if (r < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK) break;
          return false;
        }
        on_rx(static_cast<size_t>(r));
        c.rx.count(std::span<const uint8_t>(dst, static_cast<size_t>(r)), opt, k);
        if (c.rx.failed) return false;
        if (echo) {
          c.len += static_cast<size_t>(r);
          if (!flush(c)) return false;
        }
        if (static_cast<size_t>(r) < room) break;
      }
    }
    if (echo && (events & EPOLLOUT) != 0 && !flush(c)) return false;
    if ((events & (EPOLLERR | EPOLLHUP)) != 0 && c.len == 0 && !(events & EPOLLIN)) return false;
    if (c.eof && c.len == 0) return false;  // all echoed: close sends our FIN
    set_interest(slot);
    return true;
  };

  uint64_t next_tick = reporter.tick(start, k);
  while (!loop.stop_requested()) {
    const uint64_t now = now_ns();
    if (now >= deadline) break;
    const int n = loop.wait(std::min(next_tick, deadline));
    for (int i = 0; i < n; ++i) {
      const epoll_event& ev = loop.event(i);
      if (ev.data.u64 == Loop::kSignalTag) continue;
      if (ev.data.u64 == kListenTag) {
        for (;;) {
          const int fd = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) break;
          if (echo) set_nodelay(fd);  // echoed small messages must not wait for Nagle
          size_t slot;
          if (!free_slots.empty()) {
            slot = free_slots.back();
            free_slots.pop_back();
          } else {
            slot = conns.size();
            conns.emplace_back();
          }
          conns[slot] = std::make_unique<ServerConn>(opt);
          ServerConn& c = *conns[slot];
          c.fd = fd;
          if (echo) {
            c.cap = static_cast<size_t>(opt.echo_buffer);
            c.ring = std::make_unique<uint8_t[]>(c.cap);
          }
          c.interest = EPOLLIN;
          loop.add(fd, EPOLLIN, slot + 1);
          ++k.connections;
        }
        continue;
      }
      const size_t slot = ev.data.u64 - 1;
      if (slot >= conns.size() || !conns[slot]) continue;
      if (!serve(slot, ev.events)) close_conn(slot);
    }
    next_tick = reporter.tick(now_ns(), k);
  }
  for (size_t i = 0; i < conns.size(); ++i) {
    if (conns[i]) close_conn(i);
  }
  close_fd(lfd);
  const uint64_t end = now_ns();
  if (!reporter.finish(first != 0 ? first : start, first != 0 ? last : end, k, nullptr)) return 1;
  return exit_status(k);
}

// --- source ------------------------------------------------------------------

namespace {

struct SourceConn {
  int fd = -1;
  bool connected = false;
  bool shut = false;  // our FIN sent: everything was written
  bool done = false;  // peer closed: everything was received
  uint32_t interest = 0;
  ws::FrameEncoder enc;
  uint64_t quota = kNever;  // messages this connection sends (--count)
  std::unique_ptr<uint8_t[]> buf;
  size_t pos = 0;
  size_t len = 0;
  uint64_t written = 0;
  uint64_t sent_messages = 0;

  SourceConn(ws::Framing f, uint32_t size) : enc(f, size), buf(new uint8_t[kIoBytes]) {}
};

}  // namespace

int run_tcp_source(const Options& opt) {
  Loop loop;
  if (!loop.init()) return 1;
  const uint32_t size = static_cast<uint32_t>(opt.message_size);
  std::vector<std::unique_ptr<SourceConn>> conns;
  for (unsigned i = 0; i < opt.connections; ++i) {
    auto c = std::make_unique<SourceConn>(opt.framing, size);
    if (opt.count > 0) c->quota = opt.count / opt.connections + (i < opt.count % opt.connections);
    std::string error;
    c->fd = tcp_connect(opt.addr, error);
    if (c->fd < 0) {
      std::fprintf(stderr, "wsperf: %s\n", error.c_str());
      return 1;
    }
    c->interest = EPOLLOUT;
    loop.add(c->fd, EPOLLOUT, i);
    conns.push_back(std::move(c));
  }

  Counters k;
  Reporter reporter(opt);
  const uint64_t start = now_ns();
  reporter.start(start);
  const uint64_t deadline = opt.duration_s > 0 ? start + seconds_to_ns(opt.duration_s) : kNever;
  const uint64_t idle_ns = seconds_to_ns(opt.idle_timeout_s);
  uint64_t last_progress = start;
  uint64_t produced = 0;  // complete messages produced on all connections (rate tokens)
  bool stopping = false;  // duration over: finish the current message, then FIN
  bool failed = false;
  std::vector<uint8_t> sink(kIoBytes);
  const uint64_t frame = conns[0]->enc.frame_bytes();

  auto set_interest = [&](size_t i, uint32_t want) {
    SourceConn& c = *conns[i];
    if (want != c.interest) {
      loop.mod(c.fd, want, i);
      c.interest = want;
    }
  };
  // Writes as much as the socket, the quota, the rate and the deadline allow.
  // Returns true when it stopped only because its budget of sends ran out:
  // a sink that keeps up never makes send() fail, and the deadline, the
  // progress line and the other connections must still get their turn.
  auto pump = [&](size_t i, uint64_t now) {
    SourceConn& c = *conns[i];
    if (!c.connected || c.shut) return false;
    for (int sends = 0;; ++sends) {
      if (sends == 16) return true;
      if (c.pos == c.len) {
        uint64_t limit = c.quota;
        if (opt.send_messages != 0) {
          limit =
              std::min(limit, c.enc.messages() + (c.enc.at_boundary() ? 0 : 1) + opt.send_messages);
        }
        if (stopping) limit = std::min(limit, c.enc.messages() + (c.enc.at_boundary() ? 0 : 1));
        if (opt.rate > 0) {
          // Tokens are whole messages since the start; a message is paid for
          // when it is completely produced.
          const auto allowed =
              static_cast<uint64_t>(opt.rate * static_cast<double>(now - start) / 1e9) + 1;
          const uint64_t avail = allowed > produced ? allowed - produced : 0;
          limit = std::min(limit, c.enc.messages() + avail);
        }
        const uint64_t before = c.enc.messages();
        c.len = c.enc.produce(std::span<uint8_t>(c.buf.get(), kIoBytes), limit);
        c.pos = 0;
        produced += c.enc.messages() - before;
        if (c.len == 0) break;
      }
      const ssize_t w = send(c.fd, c.buf.get() + c.pos, c.len - c.pos, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          set_interest(i, EPOLLIN | EPOLLOUT);
          return false;
        }
        std::fprintf(stderr, "wsperf: send: %s\n", std::strerror(errno));
        failed = true;
        c.shut = c.done = true;
        return false;
      }
      c.pos += static_cast<size_t>(w);
      c.written += static_cast<uint64_t>(w);
      last_progress = now;
      // A message counts as sent once its last byte is in the socket.
      const uint64_t m = c.written / frame;
      k.messages += m - c.sent_messages;
      k.bytes += opt.framing == ws::Framing::kNone ? static_cast<uint64_t>(w)
                                                   : (m - c.sent_messages) * opt.message_size;
      k.stream_bytes += static_cast<uint64_t>(w);
      c.sent_messages = m;
    }
    set_interest(i, EPOLLIN);
    // Nothing left to produce and everything written: send our FIN and wait
    // for the peer's, which says every byte was received.
    const bool finished = c.enc.messages() >= c.quota || (stopping && c.enc.at_boundary());
    if (finished && c.pos == c.len) {
      shutdown(c.fd, SHUT_WR);
      c.shut = true;
    }
    return false;
  };

  uint64_t next_tick = reporter.tick(start, k);
  uint64_t end = 0;
  for (;;) {
    uint64_t now = now_ns();
    if (loop.stop_requested()) break;
    if (!stopping && now >= deadline) stopping = true;
    if (now - last_progress > idle_ns) {
      std::fprintf(stderr, "wsperf: no progress for %.1f s; giving up\n", opt.idle_timeout_s);
      failed = true;
      break;
    }
    bool all_done = true;
    bool throttled = false;
    bool busy = false;
    for (size_t i = 0; i < conns.size(); ++i) {
      SourceConn& c = *conns[i];
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
    if (all_done) {
      end = now;
      break;
    }
    uint64_t wake = std::min<uint64_t>(next_tick, stopping ? now + 100000000ull : deadline);
    if (throttled) wake = std::min<uint64_t>(wake, now + 1000000ull);  // rate tokens: 1 ms steps
    if (busy) wake = now;
    const int n = loop.wait(wake);
    now = now_ns();
    for (int e = 0; e < n; ++e) {
      const epoll_event& ev = loop.event(e);
      if (ev.data.u64 == Loop::kSignalTag) continue;
      const size_t i = ev.data.u64;
      SourceConn& c = *conns[i];
      if (c.done) continue;
      if (!c.connected) {
        const int err = socket_error(c.fd);
        if (err != 0) {
          std::fprintf(stderr, "wsperf: connect %s: %s\n", opt.addr_text.c_str(),
                       std::strerror(err));
          return 1;
        }
        c.connected = true;
        ++k.connections;
        set_interest(i, EPOLLIN);
        last_progress = now;
        pump(i, now);
        continue;
      }
      if ((ev.events & EPOLLIN) != 0) {
        // Whatever the peer sends (an echo) is read and dropped; EOF after our
        // FIN means the peer has everything.
        for (int reads = 0; reads < 16; ++reads) {
          const ssize_t r = recv(c.fd, sink.data(), sink.size(), 0);
          if (r > 0) continue;
          if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            if (!c.shut || r < 0) failed = true;
            c.done = c.shut = true;
            loop.del(c.fd);
            last_progress = now;
          }
          break;
        }
      }
      if (!c.done && (ev.events & EPOLLOUT) != 0) {
        set_interest(i, EPOLLIN);
        pump(i, now);  // a budget left over is used in the next round
      }
    }
    next_tick = reporter.tick(now, k);
  }
  if (end == 0) end = now_ns();
  for (auto& c : conns) close_fd(c->fd);
  if (!reporter.finish(start, end, k, nullptr) || failed) return 1;
  return 0;
}

// --- ping ----------------------------------------------------------------------

namespace {

struct PingConn {
  int fd = -1;
  bool connected = false;
  bool awaiting = false;  // whole request written; waiting for the rest of the reply
  uint32_t interest = 0;
  ws::FrameEncoder enc;
  RxCheck rx;
  std::unique_ptr<uint8_t[]> buf;
  size_t pos = 0;
  size_t len = 0;
  uint64_t round = 0;     // round trips completed on this connection
  bool in_round = false;  // a request is out
  uint64_t t0 = 0;

  PingConn(const Options& opt)
      : enc(opt.framing, static_cast<uint32_t>(opt.message_size)),
        rx(opt),
        buf(new uint8_t[kIoBytes]) {}
};

}  // namespace

int run_tcp_ping(const Options& opt) {
  Loop loop;
  if (!loop.init()) return 1;
  Counters k;
  Histogram rtt;
  Reporter reporter(opt);
  const uint64_t start = now_ns();
  reporter.start(start);
  const uint64_t deadline = opt.duration_s > 0 ? start + seconds_to_ns(opt.duration_s) : kNever;
  const uint64_t idle_ns = seconds_to_ns(opt.idle_timeout_s);
  uint64_t last_progress = start;
  uint64_t started = 0;  // round trips begun, for --count
  bool failed = false;
  std::vector<std::unique_ptr<PingConn>> conns(opt.connections);
  std::vector<uint8_t> rbuf(kIoBytes);
  const bool none = opt.framing == ws::Framing::kNone;

  auto open = [&](size_t i) {
    conns[i] = std::make_unique<PingConn>(opt);
    PingConn& c = *conns[i];
    std::string error;
    c.fd = tcp_connect(opt.addr, error);
    if (c.fd < 0) {
      std::fprintf(stderr, "wsperf: %s\n", error.c_str());
      return false;
    }
    set_nodelay(c.fd);  // one small request at a time: Nagle would add an RTT
    c.interest = EPOLLOUT;
    c.t0 = now_ns();  // with --reconnect the round trip includes the handshake
    loop.add(c.fd, EPOLLOUT, i);
    return true;
  };
  auto shut = [&](size_t i) {
    if (!conns[i]) return;
    loop.del(conns[i]->fd);
    close_fd(conns[i]->fd);
    conns[i].reset();
  };
  auto set_interest = [&](PingConn& c, size_t i, uint32_t want) {
    if (want != c.interest) {
      loop.mod(c.fd, want, i);
      c.interest = want;
    }
  };
  // Writes the current request. False on a socket error.
  auto pump = [&](size_t i) {
    PingConn& c = *conns[i];
    for (;;) {
      if (c.pos == c.len) {
        c.len = c.enc.produce(std::span<uint8_t>(c.buf.get(), kIoBytes), c.round + 1);
        c.pos = 0;
        if (c.len == 0) break;
      }
      const ssize_t w = send(c.fd, c.buf.get() + c.pos, c.len - c.pos, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          set_interest(c, i, EPOLLIN | EPOLLOUT);
          return true;
        }
        return false;
      }
      c.pos += static_cast<size_t>(w);
    }
    c.awaiting = true;
    set_interest(c, i, EPOLLIN);
    return true;
  };
  auto may_start = [&](uint64_t now) {
    return now < deadline && (opt.count == 0 || started < opt.count) && !loop.stop_requested();
  };
  auto begin_round = [&](size_t i, uint64_t now) {
    PingConn& c = *conns[i];
    ++started;
    c.in_round = true;
    c.awaiting = false;
    if (!opt.reconnect) c.t0 = now;
    return pump(i);
  };

  for (size_t i = 0; i < conns.size(); ++i) {
    if (!open(i)) return 1;
  }
  uint64_t next_tick = reporter.tick(start, k);
  for (;;) {
    uint64_t now = now_ns();
    if (loop.stop_requested()) break;
    bool any = false;
    for (auto& c : conns) any = any || (c && (c->in_round || !c->connected));
    if (!any && !may_start(now)) break;
    if (now >= deadline) break;  // rounds still out at the deadline are abandoned
    if (now - last_progress > idle_ns) {
      std::fprintf(stderr, "wsperf: no reply for %.1f s; giving up\n", opt.idle_timeout_s);
      failed = true;
      break;
    }
    const int n = loop.wait(std::min(next_tick, deadline));
    now = now_ns();
    for (int e = 0; e < n; ++e) {
      const epoll_event& ev = loop.event(e);
      if (ev.data.u64 == Loop::kSignalTag) continue;
      const size_t i = ev.data.u64;
      if (i >= conns.size() || !conns[i]) continue;
      PingConn& c = *conns[i];
      if (!c.connected) {
        const int err = socket_error(c.fd);
        if (err != 0) {
          std::fprintf(stderr, "wsperf: connect %s: %s\n", opt.addr_text.c_str(),
                       std::strerror(err));
          return 1;
        }
        c.connected = true;
        if (!opt.reconnect) ++k.connections;
        if (!may_start(now)) {
          shut(i);
          continue;
        }
        if (!begin_round(i, now)) failed = true;
        continue;
      }
      bool reply_done = false;
      if ((ev.events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0) {
        for (int reads = 0; reads < 16 && !reply_done; ++reads) {
          const ssize_t r = recv(c.fd, rbuf.data(), rbuf.size(), 0);
          if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
          if (r <= 0) {
            std::fprintf(stderr, "wsperf: connection closed by %s in a round trip\n",
                         opt.addr_text.c_str());
            failed = true;
            shut(i);
            break;
          }
          last_progress = now;
          std::span<const uint8_t> data(rbuf.data(), static_cast<size_t>(r));
          if (none) {
            // Framing none: a reply is complete when message_size bytes per
            // round trip have come back.
            const uint64_t want = (c.round + 1) * opt.message_size - c.rx.dec.stream_bytes();
            if (data.size() > want) data = data.first(static_cast<size_t>(want));
            c.rx.consume(data, opt, k, [](uint64_t) {});
            reply_done = c.rx.dec.stream_bytes() == (c.round + 1) * opt.message_size;
          } else {
            // Length32: one request is out, so one reply completes the round.
            c.rx.consume(data, opt, k, [&](uint64_t length) {
              if (length != opt.message_size) ++k.verify_errors;
              reply_done = true;
            });
            if (c.rx.failed) {
              failed = true;
              shut(i);
              break;
            }
          }
        }
      }
      if (!conns[i]) continue;
      if (reply_done) {
        rtt.add(now - c.t0);
        if (none) ++k.messages;  // length32 replies are counted by RxCheck
        ++c.round;
        c.in_round = false;
        if (opt.reconnect) {
          ++k.connections;
          shut(i);
          if (may_start(now) && !open(i)) return 1;
        } else if (may_start(now) && !begin_round(i, now)) {
          failed = true;
        }
        continue;
      }
      if ((ev.events & EPOLLOUT) != 0 && !c.awaiting && !pump(i)) {
        failed = true;
        shut(i);
      }
    }
    next_tick = reporter.tick(now, k);
  }
  const uint64_t end = now_ns();
  for (size_t i = 0; i < conns.size(); ++i) shut(i);
  if (!reporter.finish(start, end, k, &rtt) || failed) return 1;
  return exit_status(k);
}

}  // namespace wsperf
