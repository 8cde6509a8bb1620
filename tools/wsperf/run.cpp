#include "tools/wsperf/run.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

namespace wsperf {

uint64_t seconds_to_ns(double s) { return static_cast<uint64_t>(std::llround(s * 1e9)); }

bool Run::begin() {
  if (!loop.init()) {
    std::fprintf(stderr, "wsperf: epoll setup failed\n");
    return false;
  }
  start = now_ns();
  last_progress = start;
  reporter.start(start);
  if (opt.duration_s > 0) deadline = start + seconds_to_ns(opt.duration_s);
  next_tick = reporter.tick(start, k);
  return true;
}

int Run::open_server() {
  std::string error;
  sockaddr_in bound{};
  const int fd = opt.udp ? udp_bind(opt.addr, bound, error) : tcp_listen(opt.addr, bound, error);
  if (fd < 0 || !loop.add(fd, EPOLLIN, kListenTag)) {
    std::fprintf(stderr, "wsperf: %s\n", error.empty() ? "epoll setup failed" : error.c_str());
    close_fd(fd);
    return -1;
  }
  const char* framing = opt.framing == ws::Framing::kNone ? "none" : "length32";
  std::printf("%s: listening on %s (%s%s)\n", role_name(opt.role), endpoint_text(bound).c_str(),
              opt.udp ? "udp" : "tcp, framing ", opt.udp ? "" : framing);
  std::fflush(stdout);
  return fd;
}

bool Run::stalled(uint64_t now, const char* nothing) {
  if (now - last_progress <= seconds_to_ns(opt.idle_timeout_s)) return false;
  std::fprintf(stderr, "wsperf: no %s for %.1f s; giving up\n", nothing, opt.idle_timeout_s);
  return true;
}

int Run::finish(uint64_t first, uint64_t last, const Histogram* rtt, bool failed) {
  if (!reporter.finish(first, last, k, rtt) || failed) return 1;
  return k.verify_errors + k.protocol_errors > 0 ? 3 : 0;
}

int start_connect(Run& run, uint64_t tag) {
  std::string error;
  const int fd = tcp_connect(run.opt.addr, error);
  if (fd < 0) {
    std::fprintf(stderr, "wsperf: %s\n", error.c_str());
    return -1;
  }
  run.loop.add(fd, EPOLLOUT, tag);
  return fd;
}

bool connect_succeeded(int fd, const Options& opt) {
  const int err = socket_error(fd);
  if (err == 0) return true;
  std::fprintf(stderr, "wsperf: connect %s: %s\n", opt.addr_text.c_str(), std::strerror(err));
  return false;
}

void want_events(Loop& loop, int fd, uint32_t& current, uint32_t events, uint64_t tag) {
  if (events == current) return;
  loop.mod(fd, events, tag);
  current = events;
}

bool TxBuf::refill(ws::FrameEncoder& enc, uint64_t limit) {
  len = enc.produce(std::span<uint8_t>(data.get(), kIoBytes), limit);
  pos = 0;
  return len != 0;
}

ssize_t TxBuf::send_to(int fd) {
  const ssize_t w = send(fd, data.get() + pos, len - pos, MSG_NOSIGNAL);
  if (w < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  pos += static_cast<size_t>(w);
  return w;
}

}  // namespace wsperf
