#include "control/cli/capture.hpp"

#include <signal.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "control/capture/pcapng.hpp"
#include "control/capture/session.hpp"
#include "control/stats/clock.hpp"
#include "stack/core/drops.hpp"
#include "ws_version.h"

namespace ws::cli {

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop.store(true); }

double monotonic_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

uint64_t realtime_ns() { return stats::clock_ns(CLOCK_REALTIME); }

// The request that the options describe; false with `error` for a port or queue the
// data plane does not have.
bool build_request(const CaptureOptions& c, const capture::Session& s, capture::Request& r,
                   std::string& error) {
  r.snaplen = c.snaplen;
  r.port = capture::kAnyPort;
  if (!c.port.empty()) {
    int idx = s.port_index(c.port);
    if (idx < 0) {
      error = "no port named '" + c.port + "'; the data plane has:";
      for (uint32_t i = 0; i < s.header().ports_count; ++i) {
        error += std::string(" ") + s.header().ports[i].name;
      }
      return false;
    }
    r.port = static_cast<uint32_t>(idx);
  }
  r.queue = capture::kAnyQueue;
  if (c.queue >= 0) {
    uint32_t max_queues = 0;
    for (uint32_t i = 0; i < s.header().ports_count; ++i) {
      const auto& p = s.header().ports[i];
      if (r.port == capture::kAnyPort || r.port == i) {
        max_queues = std::max<uint32_t>(max_queues, std::max(p.rx_queues, p.tx_queues));
      }
    }
    if (static_cast<uint64_t>(c.queue) >= max_queues) {
      error = "--queue " + std::to_string(c.queue) + ": the port has " +
              std::to_string(max_queues) + " queue(s)";
      return false;
    }
    r.queue = static_cast<uint32_t>(c.queue);
  }
  if (c.drops) {
    r.what = capture::kDrops;
  } else {
    r.what = c.direction == CaptureDirection::kRx   ? capture::kRx
             : c.direction == CaptureDirection::kTx ? capture::kTx
                                                    : capture::kRx | capture::kTx;
  }
  return true;
}

// One interface description per port and queue the request can select, in order, so a
// record's (port, queue) maps to an interface id.
class Interfaces {
 public:
  Interfaces(capture::PcapngWriter& w, const capture::Header& h, const capture::Request& r,
             const Settings& settings) {
    for (uint32_t p = 0; p < h.ports_count; ++p) {
      if (r.port != capture::kAnyPort && r.port != p) continue;
      const auto& port = h.ports[p];
      uint32_t queues = std::max(port.rx_queues, port.tx_queues);
      std::string device;
      for (const auto& ps : settings.ports) {
        if (ps.name == port.name) device = ps.device;
      }
      for (uint32_t q = 0; q < queues; ++q) {
        if (r.queue != capture::kAnyQueue && r.queue != q) continue;
        std::string name = std::string(port.name) + "/" + std::to_string(q);
        std::string desc = "wirespeed port " + std::string(port.name) +
                           (device.empty() ? "" : " (" + device + ")") + " queue " +
                           std::to_string(q) + ", MTU " + std::to_string(port.mtu);
        ids_[{p, q}] = w.add_interface(name, desc, r.snaplen);
      }
    }
  }
  // The interface of a record; -1 for one outside the request. A dropped frame that another
  // core received and handed over (software RSS) carries no queue of its own: it goes on
  // its port's first interface.
  int64_t id(uint32_t port, uint32_t queue) const {
    auto it = ids_.find({port, queue});
    if (it != ids_.end()) return it->second;
    auto first = ids_.lower_bound({port, 0});
    return first != ids_.end() && first->first.first == port ? first->second : -1;
  }
  size_t size() const { return ids_.size(); }

 private:
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> ids_;
};

// Records into pcapng blocks, counted per interface.
class FrameWriter {
 public:
  FrameWriter(capture::PcapngWriter& w, const Interfaces& ifs, const CaptureOptions& c)
      : w_(w), ifs_(ifs), c_(c), per_interface_(ifs.size(), 0) {}

  void take(const capture::Record& rec, const uint8_t* bytes) {
    if (full()) return;
    if (c_.drops && c_.direction != CaptureDirection::kBoth &&
        (rec.dir == capture::Direction::kRx) != (c_.direction == CaptureDirection::kRx)) {
      return;
    }
    int64_t id = ifs_.id(rec.port, rec.queue);
    if (id < 0) return;
    std::string_view comment;
    if (rec.reason != capture::kNoReason) {
      comment = drop_reason_name(static_cast<DropReason>(rec.reason));
    }
    w_.packet(static_cast<uint32_t>(id), rec.time_ns, bytes, rec.caplen, rec.wirelen,
              rec.dir == capture::Direction::kRx ? capture::PacketDir::kInbound
                                                 : capture::PacketDir::kOutbound,
              comment);
    ++written_;
    ++per_interface_[static_cast<size_t>(id)];
  }
  bool full() const { return c_.count != 0 && written_ >= c_.count; }
  uint64_t written() const { return written_; }
  // Interface statistics blocks; the copies the data plane dropped go on the first.
  void statistics(uint64_t lost) {
    for (size_t id = 0; id < per_interface_.size(); ++id) {
      w_.statistics(static_cast<uint32_t>(id), realtime_ns(), per_interface_[id],
                    id == 0 ? lost : 0);
    }
  }

 private:
  capture::PcapngWriter& w_;
  const Interfaces& ifs_;
  const CaptureOptions& c_;
  std::vector<uint64_t> per_interface_;
  uint64_t written_ = 0;
};

// Drains and writes until a stop condition; returns why it stopped when that was not
// one the user asked for ("" otherwise).
std::string capture_loop(capture::Session& s, capture::PcapngWriter& w, FrameWriter& f,
                         const CaptureOptions& c) {
  const double start = monotonic_s();
  double next_check = start + 1;
  auto sink = [&f](const capture::Record& rec, const uint8_t* bytes) { f.take(rec, bytes); };
  while (true) {
    size_t n = s.drain(sink);
    if (!w.ok()) return "the output could not be written";
    if (s.withdrawn()) {
      return "the data plane withdrew the capture because this reader stalled (is the output "
             "blocked?); frames after that were not captured";
    }
    if (f.full() || g_stop.load()) return "";
    double now = monotonic_s();
    if (c.seconds > 0 && now - start >= c.seconds) return "";
    if (now >= next_check) {
      if (!s.dataplane_alive()) return "the data plane exited";
      next_check = now + 1;
      w.flush();
    }
    if (n == 0) {
      timespec ts{0, 200L * 1000};
      nanosleep(&ts, nullptr);
    }
  }
}

}  // namespace

int run_capture(const Options& options, const Settings& settings) {
  const CaptureOptions& c = options.capture;
  capture::Session session;
  std::string error;
  if (!session.open(settings.capture_path, error)) {
    std::fprintf(stderr, "wirespeed-control: capture: %s\n", error.c_str());
    return 1;
  }
  capture::Request request;
  if (!build_request(c, session, request, error)) {
    std::fprintf(stderr, "wirespeed-control: capture: %s\n", error.c_str());
    return 1;
  }
  bool to_stdout = c.output == "-";
  FILE* out = to_stdout ? stdout : std::fopen(c.output.c_str(), "wb");
  if (out == nullptr) {
    std::fprintf(stderr, "wirespeed-control: capture: cannot write %s\n", c.output.c_str());
    return 1;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGPIPE, SIG_IGN);  // a reader that closes the pipe ends the capture, not us
  capture::PcapngWriter writer(out, "wirespeed-control " WS_VERSION);
  Interfaces ifs(writer, session.header(), request, settings);
  FrameWriter frames(writer, ifs, c);
  session.arm(request);
  std::fprintf(stderr, "wirespeed-control: capture: capturing %s on %s%s, snaplen %u\n",
               c.drops ? "dropped frames" : "frames",
               c.port.empty() ? "every port" : c.port.c_str(),
               c.queue >= 0 ? (" queue " + std::to_string(c.queue)).c_str() : "", c.snaplen);
  std::string why = capture_loop(session, writer, frames, c);
  session.disarm();
  // What the cores copied before they saw the request go.
  session.drain([&frames](const capture::Record& rec, const uint8_t* b) { frames.take(rec, b); });
  uint64_t lost = session.dropped_copies();
  frames.statistics(lost);
  writer.flush();
  if (!to_stdout) std::fclose(out);
  std::fprintf(stderr,
               "wirespeed-control: capture: %llu frames written to %s, %llu copies dropped by "
               "the data plane%s%s%s\n",
               static_cast<unsigned long long>(frames.written()),
               to_stdout ? "standard output" : c.output.c_str(),
               static_cast<unsigned long long>(lost),
               lost != 0 ? " (the capture fell behind; its ring was full)" : "",
               why.empty() ? "" : "; stopped: ", why.c_str());
  if (!writer.ok()) return 1;
  return why.empty() || why == "the data plane exited" ? 0 : 1;
}

}  // namespace ws::cli
