// UDP echo/sink servers and source/ping clients. A message is one datagram
// whose payload is pattern(seq, 0..len); there is no length header (the
// datagram carries its length), so --framing does not apply to UDP.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <vector>

#include "stack/codec/framing.hpp"
#include "tools/wsperf/roles.hpp"
#include "tools/wsperf/run.hpp"

namespace wsperf {
namespace {

constexpr size_t kBatch = 32;           // datagrams per recvmmsg/sendmmsg
constexpr size_t kMaxDatagram = 65536;  // above the IPv4 payload limit of 65507

// Batches of datagrams for recvmmsg/sendmmsg, each in its own slot of `slot` bytes.
struct Batch {
  explicit Batch(size_t slot) : slot_bytes(std::max<size_t>(slot, 1)), bufs(kBatch * slot_bytes) {}
  uint8_t* slot(size_t i) { return bufs.data() + i * slot_bytes; }
  // Message i points at slot i with `len` bytes (and at from[i] when `with_from`).
  void point(size_t i, size_t len, bool with_from) {
    iov[i] = {slot(i), len};
    msgs[i] = {};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    if (with_from) {
      msgs[i].msg_hdr.msg_name = &from[i];
      msgs[i].msg_hdr.msg_namelen = sizeof from[i];
    }
  }

  size_t slot_bytes;
  std::vector<uint8_t> bufs;
  iovec iov[kBatch]{};
  sockaddr_in from[kBatch]{};
  mmsghdr msgs[kBatch]{};
};

// Rate tokens: whole messages allowed since the start, less those already sent.
uint64_t tokens(const Options& opt, uint64_t start, uint64_t now, uint64_t sent) {
  const auto allowed = static_cast<uint64_t>(opt.rate * static_cast<double>(now - start) / 1e9) + 1;
  return allowed > sent ? allowed - sent : 0;
}

// --- echo / sink ---------------------------------------------------------------

class UdpServer {
 public:
  explicit UdpServer(const Options& opt) : opt_(opt), run_(opt), batch_(kMaxDatagram) {}

  int run() {
    if (!run_.begin()) return 1;
    const int fd = run_.open_server();
    if (fd < 0) return 1;
    while (!run_.loop.stop_requested() && now_ns() < run_.deadline) {
      run_.poll(run_.deadline, [&](const epoll_event&, uint64_t) { receive(fd); });
    }
    close_fd(fd);
    return run_.finish_server();
  }

 private:
  void receive(int fd);
  void echo(int fd, int n);

  const Options& opt_;
  Run run_;
  Batch batch_;
};

void UdpServer::receive(int fd) {
  Counters& k = run_.k;
  for (int rounds = 0; rounds < 64; ++rounds) {
    for (size_t i = 0; i < kBatch; ++i) batch_.point(i, kMaxDatagram, true);
    const int n = recvmmsg(fd, batch_.msgs, kBatch, MSG_DONTWAIT, nullptr);
    if (n <= 0) break;
    run_.received(now_ns());
    for (int i = 0; i < n; ++i) {
      const size_t len = batch_.msgs[i].msg_len;
      ++k.messages;
      k.bytes += len;
      k.stream_bytes += len;
      // The sink cannot know which message a datagram is (UDP loses and
      // reorders), so it checks the datagram against its own first 8 bytes.
      if (opt_.verify && !ws::check_pattern_self(std::span<const uint8_t>(batch_.slot(i), len))) {
        ++k.verify_errors;
      }
      batch_.iov[i].iov_len = len;  // echo sends back exactly what came
    }
    if (opt_.role == Role::kEcho) echo(fd, n);
    if (n < static_cast<int>(kBatch)) break;
  }
}

void UdpServer::echo(int fd, int n) {
  int done = 0;
  while (done < n) {
    const int s = sendmmsg(fd, batch_.msgs + done, static_cast<unsigned>(n - done), MSG_DONTWAIT);
    if (s <= 0) {
      // UDP has no backpressure to offer the peer: a reply the kernel
      // will not take is dropped and counted, as a router would.
      if (s < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS) {
        ++run_.k.send_errors;
      }
      run_.k.drops += static_cast<uint64_t>(n - done - (s > 0 ? s : 0));
      ++done;  // skip the datagram that failed and try the rest
      continue;
    }
    done += s;
  }
}

// --- source --------------------------------------------------------------------

class UdpSource {
 public:
  explicit UdpSource(const Options& opt)
      : opt_(opt),
        size_(static_cast<size_t>(opt.message_size)),
        run_(opt),
        batch_(size_),
        flows_(opt.connections),
        rbuf_(kMaxDatagram) {}
  int run();

 private:
  struct Flow {
    int fd = -1;
    uint64_t seq = 0;  // next message's sequence number on this flow
    uint64_t quota = kNever;
    bool blocked = false;  // waiting for EPOLLOUT
  };
  bool open();
  // Sends a batch on every flow that may send; false once every flow is done.
  bool send_round(uint64_t now, bool& throttled);
  void send_batch(size_t f, uint64_t batch);
  void on_event(const epoll_event& ev);

  const Options& opt_;
  const size_t size_;
  Run run_;
  Batch batch_;
  std::vector<Flow> flows_;
  std::vector<uint8_t> rbuf_;
};

int UdpSource::run() {
  if (!run_.begin() || !open()) return 1;
  uint64_t end = 0;
  while (!run_.loop.stop_requested()) {
    const uint64_t now = now_ns();
    if (now >= run_.deadline) break;
    bool throttled = false;
    if (!send_round(now, throttled)) {
      end = now;
      break;
    }
    bool any_ready = false;
    for (const Flow& fl : flows_) any_ready = any_ready || (!fl.blocked && fl.seq < fl.quota);
    uint64_t wake = run_.deadline;
    if (any_ready) wake = throttled ? std::min<uint64_t>(wake, now + 1000000ull) : now;
    run_.poll(wake, [&](const epoll_event& ev, uint64_t) { on_event(ev); });
  }
  if (end == 0) end = now_ns();
  for (Flow& fl : flows_) close_fd(fl.fd);
  return run_.finish(run_.start, end, nullptr, false);
}

bool UdpSource::open() {
  for (size_t i = 0; i < flows_.size(); ++i) {
    std::string error;
    flows_[i].fd = udp_connect(opt_.addr, error);
    if (flows_[i].fd < 0) {
      std::fprintf(stderr, "wsperf: %s\n", error.c_str());
      return false;
    }
    if (opt_.count > 0) {
      flows_[i].quota = opt_.count / opt_.connections + (i < opt_.count % opt_.connections);
    }
    run_.loop.add(flows_[i].fd, EPOLLIN, i);
  }
  run_.k.connections = flows_.size();
  return true;
}

bool UdpSource::send_round(uint64_t now, bool& throttled) {
  bool all_done = true;
  for (size_t f = 0; f < flows_.size(); ++f) {
    Flow& fl = flows_[f];
    if (fl.seq >= fl.quota) continue;
    all_done = false;
    if (fl.blocked) continue;
    uint64_t batch = std::min<uint64_t>(kBatch, fl.quota - fl.seq);
    if (opt_.rate > 0) batch = std::min(batch, tokens(opt_, run_.start, now, run_.k.messages));
    if (batch == 0) {
      throttled = true;
      continue;
    }
    send_batch(f, batch);
  }
  return !all_done;
}

void UdpSource::send_batch(size_t f, uint64_t batch) {
  Flow& fl = flows_[f];
  for (size_t i = 0; i < batch; ++i) {
    ws::fill_pattern(fl.seq + i, 0, std::span<uint8_t>(batch_.slot(i), size_));
    batch_.point(i, size_, false);
  }
  const int s = sendmmsg(fl.fd, batch_.msgs, static_cast<unsigned>(batch), MSG_DONTWAIT);
  if (s < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
      fl.blocked = true;
      run_.loop.mod(fl.fd, EPOLLIN | EPOLLOUT, f);
    } else {
      // ECONNREFUSED: an ICMP port unreachable for an earlier datagram;
      // this one was not sent. Count it and go on.
      ++run_.k.send_errors;
      ++fl.seq;
    }
    return;
  }
  fl.seq += static_cast<uint64_t>(s);
  run_.k.messages += static_cast<uint64_t>(s);
  run_.k.bytes += static_cast<uint64_t>(s) * size_;
  run_.k.stream_bytes += static_cast<uint64_t>(s) * size_;
}

void UdpSource::on_event(const epoll_event& ev) {
  Flow& fl = flows_[ev.data.u64];
  if ((ev.events & EPOLLIN) != 0) {
    // Replies (when the target is an echo) and errors are drained and dropped.
    while (recv(fl.fd, rbuf_.data(), rbuf_.size(), MSG_DONTWAIT) >= 0 || errno == ECONNREFUSED) {
    }
  }
  if ((ev.events & EPOLLOUT) != 0 && fl.blocked) {
    fl.blocked = false;
    run_.loop.mod(fl.fd, EPOLLIN, ev.data.u64);
  }
}

// --- ping ----------------------------------------------------------------------

class UdpPing {
 public:
  explicit UdpPing(const Options& opt)
      : opt_(opt),
        size_(static_cast<size_t>(opt.message_size)),
        run_(opt),
        timeout_(seconds_to_ns(opt.timeout_s)),
        flows_(opt.connections),
        req_(std::max<size_t>(size_, 1)),
        rbuf_(kMaxDatagram) {}
  int run();

 private:
  struct Flow {
    int fd = -1;
    uint64_t seq = 0;
    uint64_t t0 = 0;
    bool out = false;  // a request is waiting for its reply
  };
  bool may_start(uint64_t now) const {
    return now < run_.deadline && (opt_.count == 0 || started_ < opt_.count) &&
           !run_.loop.stop_requested();
  }
  bool send_next(size_t f, uint64_t now);
  // Counts the rounds that timed out and starts their next; the time the next one
  // will, or kNever when no request is out.
  uint64_t expire(uint64_t now);
  void next_round(size_t f, uint64_t now);
  void on_event(const epoll_event& ev, uint64_t now);

  const Options& opt_;
  const size_t size_;
  Run run_;
  const uint64_t timeout_;
  Histogram rtt_;
  std::vector<Flow> flows_;
  std::vector<uint8_t> req_;
  std::vector<uint8_t> rbuf_;
  uint64_t started_ = 0;
  bool failed_ = false;
};

int UdpPing::run() {
  if (!run_.begin()) return 1;
  for (size_t f = 0; f < flows_.size(); ++f) {
    if (!may_start(run_.start) || !send_next(f, run_.start)) break;
  }
  while (!run_.loop.stop_requested()) {
    const uint64_t now = now_ns();
    if (now >= run_.deadline) break;
    const uint64_t wake = expire(now);
    if (wake == kNever || failed_) break;
    run_.poll(std::min(wake, run_.deadline),
              [&](const epoll_event& ev, uint64_t t) { on_event(ev, t); });
  }
  const uint64_t end = now_ns();
  for (Flow& fl : flows_) close_fd(fl.fd);
  return run_.finish(run_.start, end, &rtt_, failed_);
}

// Sends the next request on a flow (a new socket per round with --reconnect).
bool UdpPing::send_next(size_t f, uint64_t now) {
  Flow& fl = flows_[f];
  if (fl.fd < 0 || opt_.reconnect) {
    if (fl.fd >= 0) {
      run_.loop.del(fl.fd);
      close_fd(fl.fd);
    }
    std::string error;
    fl.fd = udp_connect(opt_.addr, error);
    if (fl.fd < 0) {
      std::fprintf(stderr, "wsperf: %s\n", error.c_str());
      return false;
    }
    run_.loop.add(fl.fd, EPOLLIN, f);
    ++run_.k.connections;
  }
  ws::fill_pattern(fl.seq, 0, std::span<uint8_t>(req_.data(), size_));
  fl.t0 = now;
  fl.out = true;
  ++started_;
  if (send(fl.fd, req_.data(), size_, MSG_DONTWAIT) < 0) ++run_.k.send_errors;  // shows as lost
  return true;
}

uint64_t UdpPing::expire(uint64_t now) {
  uint64_t wake = kNever;
  for (size_t f = 0; f < flows_.size(); ++f) {
    Flow& fl = flows_[f];
    if (fl.out && now - fl.t0 >= timeout_) {
      ++run_.k.lost;
      next_round(f, now);
    }
    if (fl.out) wake = std::min(wake, fl.t0 + timeout_);
  }
  return wake;
}

void UdpPing::next_round(size_t f, uint64_t now) {
  ++flows_[f].seq;
  flows_[f].out = false;
  if (may_start(now) && !send_next(f, now)) failed_ = true;
}

void UdpPing::on_event(const epoll_event& ev, uint64_t now) {
  const size_t f = ev.data.u64;
  Flow& fl = flows_[f];
  for (;;) {
    const ssize_t r = recv(fl.fd, rbuf_.data(), rbuf_.size(), MSG_DONTWAIT);
    if (r < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      continue;  // ECONNREFUSED: nobody listens; the round will time out
    }
    const std::span<const uint8_t> reply(rbuf_.data(), static_cast<size_t>(r));
    const bool ours =
        fl.out && reply.size() == size_ && ws::check_pattern(fl.seq, 0, reply) == reply.size();
    if (!ours) {
      // A late reply to a round that timed out is a valid pattern of an
      // older seq; anything else is damage.
      if (!ws::check_pattern_self(reply) || (fl.out && reply.size() != size_)) {
        ++run_.k.verify_errors;
      }
      continue;
    }
    rtt_.add(now - fl.t0);
    ++run_.k.messages;
    run_.k.bytes += size_;
    run_.k.stream_bytes += size_;
    next_round(f, now);
    break;
  }
}

}  // namespace

int run_udp_server(const Options& opt) { return UdpServer(opt).run(); }
int run_udp_source(const Options& opt) { return UdpSource(opt).run(); }
int run_udp_ping(const Options& opt) { return UdpPing(opt).run(); }

}  // namespace wsperf
