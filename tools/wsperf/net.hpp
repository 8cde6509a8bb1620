// Small wrappers over epoll, signalfd and non-blocking sockets, shared by the
// TCP and UDP roles. Every role is one thread, one epoll loop.
#pragma once

#include <netinet/in.h>
#include <sys/epoll.h>

#include <cstdint>
#include <string>

namespace wsperf {

std::string endpoint_text(const sockaddr_in& a);

class Loop {
 public:
  // Blocks SIGINT/SIGTERM and routes them to a signalfd in the epoll set, so a
  // signal is an ordinary event and the summary is printed from normal code.
  bool init();
  ~Loop();
  bool add(int fd, uint32_t events, uint64_t tag);
  bool mod(int fd, uint32_t events, uint64_t tag);
  void del(int fd);
  // Waits until `deadline_ns` at most. Returns the number of events in
  // events(); sets stop_requested() when a signal arrived.
  int wait(uint64_t deadline_ns);
  const epoll_event& event(int i) const { return events_[i]; }
  bool stop_requested() const { return stop_; }

  static constexpr uint64_t kSignalTag = ~uint64_t{0};

 private:
  int epfd_ = -1;
  int sigfd_ = -1;
  bool stop_ = false;
  epoll_event events_[256];
};

// All sockets are non-blocking and close-on-exec.
int tcp_listen(const sockaddr_in& addr, sockaddr_in& bound, std::string& error);
int tcp_connect(const sockaddr_in& addr, std::string& error);  // connect in progress
int udp_bind(const sockaddr_in& addr, sockaddr_in& bound, std::string& error);
int udp_connect(const sockaddr_in& addr, std::string& error);
// SO_ERROR of a socket whose connect() completed (0: connected).
int socket_error(int fd);
void set_nodelay(int fd);
void close_fd(int fd);

}  // namespace wsperf
