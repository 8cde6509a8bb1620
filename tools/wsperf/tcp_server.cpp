// The TCP echo and sink servers: non-blocking sockets on level-triggered epoll. The sink
// counts (and with --verify checks) what arrives; the echo sends it back as it came,
// holding at most --echo-buffer unsent bytes per connection.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <vector>

#include "tools/wsperf/roles.hpp"
#include "tools/wsperf/run.hpp"
#include "tools/wsperf/rx_check.hpp"

namespace wsperf {
namespace {

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

class TcpServer {
 public:
  explicit TcpServer(const Options& opt) : opt_(opt), run_(opt), buf_(kIoBytes) {}
  int run();

 private:
  void accept_all(int lfd);
  // Serves one connection's events; false when it must be closed.
  bool serve(size_t slot, uint32_t events);
  bool read_some(ServerConn& c);
  bool flush(ServerConn& c);
  void set_interest(size_t slot);
  void close_conn(size_t slot);

  const Options& opt_;
  const bool echo_ = opt_.role == Role::kEcho;
  Run run_;
  std::vector<std::unique_ptr<ServerConn>> conns_;  // slot i has tag i + 1
  std::vector<size_t> free_slots_;
  std::vector<uint8_t> buf_;
};

int TcpServer::run() {
  if (!run_.begin()) return 1;
  const int lfd = run_.open_server();
  if (lfd < 0) return 1;
  while (!run_.loop.stop_requested() && now_ns() < run_.deadline) {
    run_.poll(run_.deadline, [&](const epoll_event& ev, uint64_t) {
      if (ev.data.u64 == kListenTag) {
        accept_all(lfd);
        return;
      }
      const size_t slot = ev.data.u64 - 1;
      if (slot < conns_.size() && conns_[slot] && !serve(slot, ev.events)) close_conn(slot);
    });
  }
  for (size_t i = 0; i < conns_.size(); ++i) {
    if (conns_[i]) close_conn(i);
  }
  close_fd(lfd);
  return run_.finish_server();
}

void TcpServer::accept_all(int lfd) {
  for (;;) {
    const int fd = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (echo_) set_nodelay(fd);  // echoed small messages must not wait for Nagle
    size_t slot = conns_.size();
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      conns_.emplace_back();
    }
    conns_[slot] = std::make_unique<ServerConn>(opt_);
    ServerConn& c = *conns_[slot];
    c.fd = fd;
    if (echo_) {
      c.cap = static_cast<size_t>(opt_.echo_buffer);
      c.ring = std::make_unique<uint8_t[]>(c.cap);
    }
    c.interest = EPOLLIN;
    run_.loop.add(fd, EPOLLIN, slot + 1);
    ++run_.k.connections;
  }
}

bool TcpServer::serve(size_t slot, uint32_t events) {
  ServerConn& c = *conns_[slot];
  if ((events & EPOLLIN) != 0 && !c.eof && !read_some(c)) return false;
  if (echo_ && (events & EPOLLOUT) != 0 && !flush(c)) return false;
  if ((events & (EPOLLERR | EPOLLHUP)) != 0 && c.len == 0 && !(events & EPOLLIN)) return false;
  if (c.eof && c.len == 0) return false;  // all echoed: close sends our FIN
  set_interest(slot);
  return true;
}

// Reads (the echo into its ring, the sink into the shared buffer) and counts. False when
// the connection failed or broke the framing.
bool TcpServer::read_some(ServerConn& c) {
  // A bounded number of reads per wakeup keeps many connections fair.
  for (int i = 0; i < 16; ++i) {
    uint8_t* dst = buf_.data();
    size_t room = buf_.size();
    if (echo_) {
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
    if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    run_.received(now_ns());
    c.rx.count(std::span<const uint8_t>(dst, static_cast<size_t>(r)), opt_, run_.k);
    if (c.rx.failed) return false;
    if (echo_) {
      c.len += static_cast<size_t>(r);
      if (!flush(c)) return false;
    }
    if (static_cast<size_t>(r) < room) break;
  }
  return true;
}

// Echo: sends what the ring holds. False when the connection is gone.
bool TcpServer::flush(ServerConn& c) {
  while (c.len > 0) {
    const size_t n = std::min(c.len, c.cap - c.head);
    const ssize_t w = send(c.fd, c.ring.get() + c.head, n, MSG_NOSIGNAL);
    if (w < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    c.head = (c.head + static_cast<size_t>(w)) % c.cap;
    c.len -= static_cast<size_t>(w);
  }
  c.head = 0;  // empty: restart at the front so reads get the largest piece
  return true;
}

void TcpServer::set_interest(size_t slot) {
  ServerConn& c = *conns_[slot];
  uint32_t want = 0;
  if (!c.eof && (!echo_ || c.len < c.cap)) want |= EPOLLIN;
  if (c.len > 0) want |= EPOLLOUT;
  want_events(run_.loop, c.fd, c.interest, want, slot + 1);
}

void TcpServer::close_conn(size_t slot) {
  ServerConn& c = *conns_[slot];
  if (c.rx.dec.in_message()) ++run_.k.truncated;
  run_.loop.del(c.fd);
  close_fd(c.fd);
  conns_[slot].reset();
  free_slots_.push_back(slot);
}

}  // namespace

int run_tcp_server(const Options& opt) { return TcpServer(opt).run(); }

}  // namespace wsperf
