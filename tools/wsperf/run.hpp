// What every role has: the event loop, the counters, the progress lines, the start time
// and the deadline, and the exit status; and the socket steps more than one role takes.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "stack/codec/framing.hpp"
#include "tools/wsperf/net.hpp"
#include "tools/wsperf/options.hpp"
#include "tools/wsperf/report.hpp"

namespace wsperf {

inline constexpr uint64_t kNever = ~uint64_t{0};
inline constexpr size_t kIoBytes = size_t{256} * 1024;  // per read, and per connection's output
inline constexpr uint64_t kListenTag = 0;               // the servers' one socket

uint64_t seconds_to_ns(double s);

struct Run {
  explicit Run(const Options& o) : opt(o), reporter(o) {}

  // Sets up the loop and starts the clock; false (with a message) when it cannot.
  bool begin();
  // Servers: binds or listens on --listen, adds the socket as kListenTag and says where
  // (the tests read the port from this line). -1 after a message when it cannot.
  int open_server();
  // Waits for events until `wake` at most (and not past the next progress line), gives
  // each socket event to on_event(event, now) (signals only set loop.stop_requested()),
  // then prints the progress line when one is due.
  template <class OnEvent>
  void poll(uint64_t wake, OnEvent&& on_event) {
    const int n = loop.wait(wake < next_tick ? wake : next_tick);
    const uint64_t now = now_ns();
    for (int i = 0; i < n; ++i) {
      const epoll_event& ev = loop.event(i);
      if (ev.data.u64 != Loop::kSignalTag) on_event(ev, now);
    }
    next_tick = reporter.tick(now_ns(), k);
  }
  // Clients: true (after saying so) when nothing moved for --idle-timeout.
  bool stalled(uint64_t now, const char* nothing);
  // Servers: the time of data as it arrives, so that rates are over the first to the
  // last byte, not over the time spent waiting for a client.
  void received(uint64_t now) {
    if (first_rx == 0) first_rx = now;
    last_rx = now;
  }
  // The summary line and the report; returns the exit status: 1 when `failed` or the
  // report could not be written, 3 when received bytes were not the pattern or broke the
  // framing, else 0. Servers pass first_rx/last_rx (0: nothing arrived).
  int finish(uint64_t first, uint64_t last, const Histogram* rtt, bool failed);
  int finish_server() {
    const uint64_t end = now_ns();
    return finish(first_rx != 0 ? first_rx : start, first_rx != 0 ? last_rx : end, nullptr, false);
  }

  const Options& opt;
  Loop loop;
  Counters k;
  Reporter reporter;
  uint64_t start = 0;
  uint64_t deadline = kNever;  // --duration
  uint64_t last_progress = 0;  // clients: last byte moved, for --idle-timeout
  uint64_t next_tick = 0;
  uint64_t first_rx = 0;
  uint64_t last_rx = 0;
};

// A TCP connect in progress to --target, in the loop with EPOLLOUT as `tag`; -1 after a
// message when the socket cannot be made.
int start_connect(Run& run, uint64_t tag);
// Whether a connect in progress succeeded; says why when not.
bool connect_succeeded(int fd, const Options& opt);
// Changes a socket's epoll events when they differ from `current`.
void want_events(Loop& loop, int fd, uint32_t& current, uint32_t events, uint64_t tag);

// A TCP client's bytes produced by its encoder and not yet sent.
struct TxBuf {
  std::unique_ptr<uint8_t[]> data{new uint8_t[kIoBytes]};
  size_t pos = 0;
  size_t len = 0;

  bool drained() const { return pos == len; }
  // Produces messages up to number `limit` (FrameEncoder::produce); false when none came.
  bool refill(ws::FrameEncoder& enc, uint64_t limit);
  // send() of what is left: bytes written, 0 when the socket is full, -1 on an error.
  ssize_t send_to(int fd);
};

}  // namespace wsperf
