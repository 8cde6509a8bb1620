#include "control/capture/session.hpp"

#include <signal.h>
#include <sys/file.h>
#include <time.h>

#include <cerrno>

namespace ws::capture {

namespace {

void sleep_us(long us) {
  timespec ts{0, us * 1000};
  nanosleep(&ts, nullptr);
}

}  // namespace

Session::~Session() {
  if (armed_) disarm();
}

bool Session::open(const std::string& path, std::string& error) {
  if (!segment_.open(path, error)) return false;
  // The lock goes with the file descriptor: a capture that dies releases it.
  if (::flock(segment_.fd(), LOCK_EX | LOCK_NB) != 0) {
    error = errno == EWOULDBLOCK ? "another capture is running on this data plane (" + path + ")"
                                 : "cannot lock " + path;
    return false;
  }
  if (!dataplane_alive()) {
    error = "the data plane that created " + path + " (pid " +
            std::to_string(header().dataplane_pid) + ") is not running";
    return false;
  }
  for (uint32_t c = 0; c < header().cores; ++c) {
    readers_.emplace_back(segment_.ring(c), segment_.ring_data(c), header().ring_bytes);
  }
  return true;
}

int Session::port_index(std::string_view name) const {
  for (uint32_t i = 0; i < header().ports_count; ++i) {
    if (name == header().ports[i].name) return static_cast<int>(i);
  }
  return -1;
}

void Session::arm(const Request& request) {
  Header* h = segment_.header();
  // A reader that died while armed left the request on (its lock is ours now): withdraw
  // it and give the cores time to finish the burst they may be copying.
  h->armed.store(0, std::memory_order_release);
  sleep_us(2000);
  for (auto& r : readers_) r.discard();
  dropped_at_arm_.clear();
  for (uint32_t c = 0; c < h->cores; ++c) {
    dropped_at_arm_.push_back(segment_.ring(c)->dropped.load(std::memory_order_relaxed));
  }
  h->request = request;
  h->reader_beat.fetch_add(1, std::memory_order_release);
  h->armed.store(1, std::memory_order_release);
  armed_ = true;
}

size_t Session::drain(const Sink& sink) {
  segment_.header()->reader_beat.fetch_add(1, std::memory_order_release);
  size_t n = 0;
  for (auto& r : readers_) {
    while (const Record* rec = r.peek()) {
      sink(*rec, RingReader::bytes_of(rec));
      r.release(rec);
      ++n;
    }
  }
  return n;
}

void Session::disarm() {
  segment_.header()->armed.store(0, std::memory_order_release);
  armed_ = false;
  sleep_us(2000);  // copies in flight when the request went away land in the rings
}

uint64_t Session::dropped_copies() const {
  uint64_t total = 0;
  for (uint32_t c = 0; c < header().cores && c < dropped_at_arm_.size(); ++c) {
    total += segment_.ring(c)->dropped.load(std::memory_order_relaxed) - dropped_at_arm_[c];
  }
  return total;
}

bool Session::withdrawn() const {
  return armed_ && header().armed.load(std::memory_order_acquire) == 0;
}

bool Session::dataplane_alive() const {
  auto pid = static_cast<pid_t>(header().dataplane_pid);
  return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM);
}

}  // namespace ws::capture
