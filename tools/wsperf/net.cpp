#include "tools/wsperf/net.hpp"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tools/wsperf/report.hpp"

namespace wsperf {

std::string endpoint_text(const sockaddr_in& a) {
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

bool Loop::init() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return false;
  // Writes to a reset connection must return EPIPE, not kill the process.
  signal(SIGPIPE, SIG_IGN);
  sigfd_ = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (sigfd_ < 0 || epfd_ < 0) return false;
  return add(sigfd_, EPOLLIN, kSignalTag);
}

Loop::~Loop() {
  close_fd(sigfd_);
  close_fd(epfd_);
}

bool Loop::add(int fd, uint32_t events, uint64_t tag) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = tag;
  return epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) == 0;
}

bool Loop::mod(int fd, uint32_t events, uint64_t tag) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = tag;
  return epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev) == 0;
}

void Loop::del(int fd) { epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr); }

int Loop::wait(uint64_t deadline_ns) {
  const uint64_t now = now_ns();
  int timeout_ms = 0;
  if (deadline_ns > now) {
    const uint64_t ms = (deadline_ns - now + 999999) / 1000000;
    timeout_ms = ms > 1000 ? 1000 : static_cast<int>(ms);
  }
  int n =
      epoll_wait(epfd_, events_, static_cast<int>(sizeof events_ / sizeof events_[0]), timeout_ms);
  if (n < 0) return 0;  // EINTR
  for (int i = 0; i < n; ++i) {
    if (events_[i].data.u64 == kSignalTag) {
      signalfd_siginfo info{};
      while (read(sigfd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      }
      stop_ = true;
    }
  }
  return n;
}

namespace {

int new_socket(int type, std::string& error) {
  const int fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) error = std::string("socket: ") + std::strerror(errno);
  return fd;
}

bool bind_to(int fd, const sockaddr_in& addr, sockaddr_in& bound, std::string& error) {
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    error = "bind " + endpoint_text(addr) + ": " + std::strerror(errno);
    return false;
  }
  socklen_t len = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  return true;
}

}  // namespace

int tcp_listen(const sockaddr_in& addr, sockaddr_in& bound, std::string& error) {
  const int fd = new_socket(SOCK_STREAM, error);
  if (fd < 0) return -1;
  if (!bind_to(fd, addr, bound, error) || listen(fd, 4096) != 0) {
    if (error.empty()) error = std::string("listen: ") + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

int tcp_connect(const sockaddr_in& addr, std::string& error) {
  const int fd = new_socket(SOCK_STREAM, error);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 &&
      errno != EINPROGRESS) {
    error = "connect " + endpoint_text(addr) + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

int udp_bind(const sockaddr_in& addr, sockaddr_in& bound, std::string& error) {
  const int fd = new_socket(SOCK_DGRAM, error);
  if (fd < 0) return -1;
  // Bursts of small datagrams overflow the default buffer long before the
  // loop falls behind on average.
  const int size = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  if (!bind_to(fd, addr, bound, error)) {
    close(fd);
    return -1;
  }
  return fd;
}

int udp_connect(const sockaddr_in& addr, std::string& error) {
  const int fd = new_socket(SOCK_DGRAM, error);
  if (fd < 0) return -1;
  const int size = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    error = "connect " + endpoint_text(addr) + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

int socket_error(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

void set_nodelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void close_fd(int fd) {
  if (fd >= 0) close(fd);
}

}  // namespace wsperf
