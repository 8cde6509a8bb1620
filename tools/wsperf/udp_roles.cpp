// UDP echo/sink servers and source/ping clients. A message is one datagram
// whose payload is pattern(seq, 0..len); there is no length header (the
// datagram carries its length), so --framing does not apply to UDP.
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

constexpr uint64_t kNever = ~uint64_t{0};
constexpr size_t kBatch = 32;           // datagrams per recvmmsg/sendmmsg
constexpr size_t kMaxDatagram = 65536;  // above the IPv4 payload limit of 65507

uint64_t seconds_to_ns(double s) { return static_cast<uint64_t>(std::llround(s * 1e9)); }

}  // namespace

int run_udp_server(const Options& opt) {
  const bool echo = opt.role == Role::kEcho;
  Loop loop;
  std::string error;
  sockaddr_in bound{};
  const int fd = loop.init() ? udp_bind(opt.addr, bound, error) : -1;
  if (fd < 0 || !loop.add(fd, EPOLLIN, 0)) {
    std::fprintf(stderr, "wsperf: %s\n", error.empty() ? "epoll setup failed" : error.c_str());
    return 1;
  }
  std::printf("%s: listening on %s (udp)\n", role_name(opt.role), endpoint_text(bound).c_str());
  std::fflush(stdout);

  std::vector<uint8_t> bufs(kBatch * kMaxDatagram);
  iovec iov[kBatch];
  sockaddr_in from[kBatch];
  mmsghdr msgs[kBatch];
  Counters k;
  Reporter reporter(opt);
  const uint64_t start = now_ns();
  reporter.start(start);
  const uint64_t deadline = opt.duration_s > 0 ? start + seconds_to_ns(opt.duration_s) : kNever;
  uint64_t first = 0;
  uint64_t last = 0;
  uint64_t next_tick = reporter.tick(start, k);
  while (!loop.stop_requested() && now_ns() < deadline) {
    loop.wait(std::min(next_tick, deadline));
    for (int rounds = 0; rounds < 64; ++rounds) {
      for (size_t i = 0; i < kBatch; ++i) {
        iov[i] = {bufs.data() + i * kMaxDatagram, kMaxDatagram};
        msgs[i] = {};
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_name = &from[i];
        msgs[i].msg_hdr.msg_namelen = sizeof from[i];
      }
      const int n = recvmmsg(fd, msgs, kBatch, MSG_DONTWAIT, nullptr);
      if (n <= 0) break;
      const uint64_t t = now_ns();
      if (first == 0) first = t;
      last = t;
      for (int i = 0; i < n; ++i) {
        const size_t len = msgs[i].msg_len;
        ++k.messages;
        k.bytes += len;
        k.stream_bytes += len;
        // The sink cannot know which message a datagram is (UDP loses and
        // reorders), so it checks the datagram against its own first 8 bytes.
        if (opt.verify && !ws::check_pattern_self(
                              std::span<const uint8_t>(bufs.data() + i * kMaxDatagram, len))) {
          ++k.verify_errors;
        }
        iov[i].iov_len = len;  // echo sends back exactly what came
      }
      if (echo) {
        int done = 0;
        while (done < n) {
          const int s = sendmmsg(fd, msgs + done, static_cast<unsigned>(n - done), MSG_DONTWAIT);
          if (s <= 0) {
            // UDP has no backpressure to offer the peer: a reply the kernel
            // will not take is dropped and counted, as a router would.
            if (s < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS) {
              ++k.send_errors;
            }
            k.drops += static_cast<uint64_t>(n - done - (s > 0 ? s : 0));
            ++done;  // skip the datagram that failed and try the rest
            continue;
          }
          done += s;
        }
      }
      if (n < static_cast<int>(kBatch)) break;
    }
    next_tick = reporter.tick(now_ns(), k);
  }
  close_fd(fd);
  const uint64_t end = now_ns();
  if (!reporter.finish(first != 0 ? first : start, first != 0 ? last : end, k, nullptr)) return 1;
  return k.verify_errors > 0 ? 3 : 0;
}

int run_udp_source(const Options& opt) {
  Loop loop;
  if (!loop.init()) return 1;
  const size_t size = static_cast<size_t>(opt.message_size);
  struct Flow {
    int fd = -1;
    uint64_t seq = 0;  // next message's sequence number on this flow
    uint64_t quota = kNever;
    bool blocked = false;  // waiting for EPOLLOUT
  };
  std::vector<Flow> flows(opt.connections);
  for (size_t i = 0; i < flows.size(); ++i) {
    std::string error;
    flows[i].fd = udp_connect(opt.addr, error);
    if (flows[i].fd < 0) {
      std::fprintf(stderr, "wsperf: %s\n", error.c_str());
      return 1;
    }
    if (opt.count > 0)
      flows[i].quota = opt.count / opt.connections + (i < opt.count % opt.connections);
    loop.add(flows[i].fd, EPOLLIN, i);
  }
  std::vector<uint8_t> bufs(kBatch * std::max<size_t>(size, 1));
  iovec iov[kBatch];
  mmsghdr msgs[kBatch];
  std::vector<uint8_t> rbuf(kMaxDatagram);

  Counters k;
  k.connections = flows.size();
  Reporter reporter(opt);
  const uint64_t start = now_ns();
  reporter.start(start);
  const uint64_t deadline = opt.duration_s > 0 ? start + seconds_to_ns(opt.duration_s) : kNever;
  uint64_t next_tick = reporter.tick(start, k);
  uint64_t end = 0;
  for (;;) {
    uint64_t now = now_ns();
    if (loop.stop_requested() || now >= deadline) break;
    bool all_done = true;
    bool throttled = false;
    for (size_t f = 0; f < flows.size(); ++f) {
      Flow& fl = flows[f];
      if (fl.seq >= fl.quota) continue;
      all_done = false;
      if (fl.blocked) continue;
      uint64_t batch = std::min<uint64_t>(kBatch, fl.quota - fl.seq);
      if (opt.rate > 0) {
        const auto allowed =
            static_cast<uint64_t>(opt.rate * static_cast<double>(now - start) / 1e9) + 1;
        batch = std::min(batch, allowed > k.messages ? allowed - k.messages : 0);
        if (batch == 0) {
          throttled = true;
          continue;
        }
      }
      for (size_t i = 0; i < batch; ++i) {
        uint8_t* p = bufs.data() + i * std::max<size_t>(size, 1);
        ws::fill_pattern(fl.seq + i, 0, std::span<uint8_t>(p, size));
        iov[i] = {p, size};
        msgs[i] = {};
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
      }
      const int s = sendmmsg(fl.fd, msgs, static_cast<unsigned>(batch), MSG_DONTWAIT);
      if (s < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
          fl.blocked = true;
          loop.mod(fl.fd, EPOLLIN | EPOLLOUT, f);
        } else {
          // ECONNREFUSED: an ICMP port unreachable for an earlier datagram;
          // this one was not sent. Count it and go on.
          ++k.send_errors;
          ++fl.seq;
        }
        continue;
      }
      fl.seq += static_cast<uint64_t>(s);
      k.messages += static_cast<uint64_t>(s);
      k.bytes += static_cast<uint64_t>(s) * size;
      k.stream_bytes += static_cast<uint64_t>(s) * size;
    }
    if (all_done) {
      end = now;
      break;
    }
    bool any_ready = false;
    for (const Flow& fl : flows) any_ready = any_ready || (!fl.blocked && fl.seq < fl.quota);
    uint64_t wake = std::min(next_tick, deadline);
    if (any_ready) wake = throttled ? std::min<uint64_t>(wake, now + 1000000ull) : now;
    const int n = loop.wait(wake);
    for (int e = 0; e < n; ++e) {
      const epoll_event& ev = loop.event(e);
      if (ev.data.u64 == Loop::kSignalTag) continue;
      Flow& fl = flows[ev.data.u64];
      if ((ev.events & EPOLLIN) != 0) {
        // Replies (when the target is an echo) and errors are drained and dropped.
        while (recv(fl.fd, rbuf.data(), rbuf.size(), MSG_DONTWAIT) >= 0 || errno == ECONNREFUSED) {
        }
      }
      if ((ev.events & EPOLLOUT) != 0 && fl.blocked) {
        fl.blocked = false;
        loop.mod(fl.fd, EPOLLIN, ev.data.u64);
      }
    }
    next_tick = reporter.tick(now_ns(), k);
  }
  if (end == 0) end = now_ns();
  for (Flow& fl : flows) close_fd(fl.fd);
  return reporter.finish(start, end, k, nullptr) ? 0 : 1;
}

int run_udp_ping(const Options& opt) {
  Loop loop;
  if (!loop.init()) return 1;
  const size_t size = static_cast<size_t>(opt.message_size);
  struct Flow {
    int fd = -1;
    uint64_t seq = 0;
    uint64_t t0 = 0;
    bool out = false;  // a request is waiting for its reply
  };
  std::vector<Flow> flows(opt.connections);
  std::vector<uint8_t> req(std::max<size_t>(size, 1));
  std::vector<uint8_t> rbuf(kMaxDatagram);
  Counters k;
  Histogram rtt;
  Reporter reporter(opt);
  const uint64_t start = now_ns();
  reporter.start(start);
  const uint64_t deadline = opt.duration_s > 0 ? start + seconds_to_ns(opt.duration_s) : kNever;
  const uint64_t timeout = seconds_to_ns(opt.timeout_s);
  uint64_t started = 0;
  bool failed = false;

  auto may_start = [&](uint64_t now) {
    return now < deadline && (opt.count == 0 || started < opt.count) && !loop.stop_requested();
  };
  // Sends the next request on a flow (a new socket per round with --reconnect).
  auto send_next = [&](size_t f, uint64_t now) {
    Flow& fl = flows[f];
    if (fl.fd < 0 || opt.reconnect) {
      if (fl.fd >= 0) {
        loop.del(fl.fd);
        close_fd(fl.fd);
      }
      std::string error;
      fl.fd = udp_connect(opt.addr, error);
      if (fl.fd < 0) {
        std::fprintf(stderr, "wsperf: %s\n", error.c_str());
        return false;
      }
      loop.add(fl.fd, EPOLLIN, f);
      ++k.connections;
    }
    ws::fill_pattern(fl.seq, 0, std::span<uint8_t>(req.data(), size));
    fl.t0 = now;
    fl.out = true;
    ++started;
    if (send(fl.fd, req.data(), size, MSG_DONTWAIT) < 0) ++k.send_errors;  // shows up as lost
    return true;
  };

  for (size_t f = 0; f < flows.size(); ++f) {
    if (!may_start(start) || !send_next(f, start)) break;
  }
  uint64_t next_tick = reporter.tick(start, k);
  for (;;) {
    uint64_t now = now_ns();
    if (loop.stop_requested() || now >= deadline) break;
    bool any_out = false;
    uint64_t wake = std::min(next_tick, deadline);
    for (size_t f = 0; f < flows.size(); ++f) {
      Flow& fl = flows[f];
      if (fl.out && now - fl.t0 >= timeout) {
        ++k.lost;
        ++fl.seq;
        fl.out = false;
        if (may_start(now) && !send_next(f, now)) failed = true;
      }
      if (fl.out) {
        any_out = true;
        wake = std::min(wake, fl.t0 + timeout);
      }
    }
    if (!any_out || failed) break;
    const int n = loop.wait(wake);
    now = now_ns();
    for (int e = 0; e < n; ++e) {
      const epoll_event& ev = loop.event(e);
      if (ev.data.u64 == Loop::kSignalTag) continue;
      const size_t f = ev.data.u64;
      Flow& fl = flows[f];
      for (;;) {
        const ssize_t r = recv(fl.fd, rbuf.data(), rbuf.size(), MSG_DONTWAIT);
        if (r < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK) break;
          continue;  // ECONNREFUSED: nobody listens; the round will time out
        }
        const std::span<const uint8_t> reply(rbuf.data(), static_cast<size_t>(r));
        const bool ours =
            fl.out && reply.size() == size && ws::check_pattern(fl.seq, 0, reply) == reply.size();
        if (!ours) {
          // A late reply to a round that timed out is a valid pattern of an
          // older seq; anything else is damage.
          if (!ws::check_pattern_self(reply) || (fl.out && reply.size() != size)) {
            ++k.verify_errors;
          }
          continue;
        }
        rtt.add(now - fl.t0);
        ++k.messages;
        k.bytes += size;
        k.stream_bytes += size;
        ++fl.seq;
        fl.out = false;
        if (may_start(now) && !send_next(f, now)) failed = true;
        break;
      }
    }
    next_tick = reporter.tick(now, k);
  }
  const uint64_t end = now_ns();
  for (Flow& fl : flows) close_fd(fl.fd);
  if (!reporter.finish(start, end, k, &rtt) || failed) return 1;
  return k.verify_errors > 0 ? 3 : 0;
}

}  // namespace wsperf
