// Counting, the round-trip histogram, progress lines, the summary line and the
// JSON report. The line format is the one wirespeed's client services print:
//   source: 12.3 s, 1234567 messages, 1.23 Gbit/s, 100345 msg/s
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "tools/wsperf/options.hpp"

namespace wsperf {

// Monotonic nanoseconds.
uint64_t now_ns();

struct Counters {
  uint64_t messages = 0;       // complete messages (ping: round trips)
  uint64_t bytes = 0;          // payload bytes (ping: one direction)
  uint64_t stream_bytes = 0;   // bytes on the wire above the transport, headers included
  uint64_t connections = 0;    // connections accepted or completed
  uint64_t verify_errors = 0;  // messages whose bytes were not the pattern
  uint64_t protocol_errors = 0;
  uint64_t truncated = 0;  // connections that ended in the middle of a message
  uint64_t lost = 0;       // UDP ping: replies that never came
  uint64_t send_errors = 0;
  uint64_t drops = 0;  // UDP echo: replies the kernel would not take
};

// Log-linear histogram of nanoseconds: 64 sub-buckets per power of two, so a
// percentile is within 1.6% of the true value, in fixed memory however long
// the run.
class Histogram {
 public:
  void add(uint64_t ns);
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  // The value below which `q` (0..1) of the samples fall (upper edge of its bucket).
  uint64_t quantile(double q) const;

 private:
  static constexpr int kSub = 64;
  static size_t index(uint64_t v);
  static uint64_t upper(size_t index);
  std::array<uint64_t, 64 * kSub> buckets_{};
  uint64_t count_ = 0;
  uint64_t max_ = 0;
};

class Reporter {
 public:
  explicit Reporter(const Options& opt) : opt_(opt) {}
  void start(uint64_t now);
  // Prints a progress line when a second has passed. Returns the time of the
  // next line, for the caller's poll timeout.
  uint64_t tick(uint64_t now, const Counters& c);
  // Summary line and, with --report, the JSON file. `first`/`last` bound the
  // measured interval (servers: first and last byte seen). False when the
  // report could not be written.
  bool finish(uint64_t first, uint64_t last, const Counters& c, const Histogram* rtt);

 private:
  std::string line(double seconds, double interval, uint64_t messages, uint64_t bytes) const;
  const Options& opt_;
  uint64_t start_ = 0;
  uint64_t next_ = 0;
  uint64_t last_time_ = 0;
  Counters last_{};
};

}  // namespace wsperf
