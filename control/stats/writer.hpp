// ws::stats::Writer — the data plane's side of the stats segment.
//
// The data plane counts into private, per-core, cache-line-aligned arrays of uint64_t
// (plain increments, no atomics, no locks) and now and then publishes a copy of each array
// into a shared file that wirespeed-control maps read-only. Reading never costs the data
// plane anything, and the control process never links DPDK.
//
// Life cycle (all of it on the main lcore unless stated):
//
//   ws::stats::Writer w;
//   if (!w.create(ws::stats::segment_path(cfg.dataplane.file_prefix), {.lcore_ids = {1, 2}}))
//     fail(w.last_error());
//
//   // 1. Register everything you will ever count (before seal()). Same name + different
//   //    label values = another series of the same family. (Set the fields one by one, or
//   //    use designated initializers with -Wno-missing-field-initializers: GCC 12 warns
//   //    about every member a designated initializer leaves out.)
//   ws::stats::MetricSpec spec;
//   spec.name = "wirespeed_port_receive_packets_total";
//   spec.help = "Packets received by the port.";
//   spec.type = ws::stats::MetricType::kCounter;
//   spec.labels = {{"port", "p0"}};
//   spec.scope = ws::stats::Scope::kGlobal;          // written by the main lcore only
//   std::optional<ws::stats::Slot> rx = w.register_metric(spec);
//   if (!rx) fail(w.last_error());
//   //    Per-core counters: scope kPerCoreSum (summed) or kPerCoreLabeled (label core).
//   //    Histograms: type kHistogram, spec.histogram = {.scale = 1e-9, .first = 10,
//   //    .last = 34} to observe nanoseconds and export 1.024 us .. 17 s buckets.
//   //    Time counters: count ns into a *_seconds_total counter with spec.scale = 1e-9.
//   w.set_info("version", WS_VERSION);  w.set_info("port.p0.mac", "02:00:00:00:00:01");
//
//   // 2. Seal: lays out and creates the file, atomically renamed into place.
//   if (!w.seal()) fail(w.last_error());
//
//   // 3. Each core takes cheap handles to its own private copy, once:
//   ws::stats::Counter c = w.counter(*drops, core);   c.add();        // fast path
//   ws::stats::Histogram h = w.histogram(*rtt, core); h.observe(ns);  // fast path
//   //    or raw words:  uint64_t* v = w.core_values(core); v[drops->offset] += 1;
//   //    (a histogram slot is kHistogramWords words: 64 buckets, sum, count)
//   //    and, every ~10-100 ms on a TSC deadline, on that core:
//   w.publish(core);
//
//   // 4. The main lcore writes Scope::kGlobal metrics (e.g. rte_eth_stats_get results)
//   //    through w.global_values() / w.counter(slot) / w.gauge(slot), then about once a
//   //    second calls w.publish_global(), which also refreshes the heartbeat.
//
//   // 5. On clean exit: w.remove();   (marks the segment stopped and unlinks it)
//
// Threading: publish(core) only from the thread that owns `core`; everything else from
// one thread (the main lcore). No call allocates or locks after seal(), except remove().
// Errors are returned, never thrown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "control/stats/histogram.hpp"
#include "control/stats/layout.hpp"
#include "control/stats/names.hpp"
#include "control/stats/path.hpp"

namespace ws::stats {

struct HistogramSpec {
  double scale = 1e-9;  // raw value unit in base units (1e-9: you observe nanoseconds)
  uint8_t first = 0;    // lowest exported bucket: upper bound 2^first * scale
  uint8_t last = 40;    // highest exported bucket before +Inf (< kHistogramBuckets - 1)
};

struct MetricSpec {
  std::string_view name;  // e.g. wirespeed_drops_total (must start with wirespeed_)
  std::string_view help;  // one line, shown as # HELP
  MetricType type = MetricType::kCounter;
  std::vector<LabelPair> labels;  // keys: port queue core service state reason direction
  Scope scope = Scope::kPerCoreSum;
  HistogramSpec histogram;  // only for kHistogram
  // Counters and gauges: exported value = raw value x scale. Count in integer raw units on
  // the fast path and let the reader convert: e.g. nanoseconds into a _seconds_total
  // counter with scale 1e-9. (Histograms use histogram.scale.)
  double scale = 1.0;
};

// Where a registered metric's words live. `offset` indexes core_values(core) for per-core
// scopes and global_values() for Scope::kGlobal.
struct Slot {
  uint32_t offset = 0;
  Scope scope = Scope::kGlobal;
  MetricType type = MetricType::kCounter;
};

// Handles: a pointer into the owner's private copy. Copy them freely; keep per core.
struct Counter {
  uint64_t* p = nullptr;
  void add(uint64_t n = 1) const { *p += n; }
  // For values that come as running totals from elsewhere (rte_eth_stats_get).
  void set(uint64_t total) const { *p = total; }
};
struct Gauge {
  uint64_t* p = nullptr;  // exported as a signed 64-bit value
  void set(int64_t v) const { *p = static_cast<uint64_t>(v); }
  void add(int64_t d) const { *p += static_cast<uint64_t>(d); }
  void sub(int64_t d) const { *p -= static_cast<uint64_t>(d); }
};
struct Histogram {
  uint64_t* p = nullptr;
  void observe(uint64_t raw) const { histogram_observe(p, raw); }
};

struct WriterOptions {
  // One value block per data-plane core; the block index is the `core` argument of the
  // calls below, and lcore_ids[i] is the `core` label value of block i.
  std::vector<uint32_t> lcore_ids = {0};
};

class Writer {
 public:
  Writer() = default;
  ~Writer();  // unmaps; does NOT remove the file (a crash leaves it for post-mortems)
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Start a segment at `path` (its directory is created if missing). Nothing is visible
  // to readers until seal().
  bool create(std::string path, WriterOptions options = {});

  // Registration, before seal(). Returns nullopt and sets last_error() on invalid input:
  // bad name, a label key outside the bounded set, a value that is not an identifier,
  // the same series twice, or a name reused with another type/help/scope.
  std::optional<Slot> register_metric(const MetricSpec& spec);
  // Static strings for the operator (build, port MAC/address/device, service kinds).
  bool set_info(std::string_view key, std::string_view value);

  // Lay out and write the file, then rename it into place (readers never see a half
  // written segment). After this, registration is closed.
  bool seal();

  // Private, per-core working copies (64-byte aligned). Valid after seal().
  uint64_t* core_values(uint32_t core) { return words(core_work_[core]); }
  uint64_t* global_values() { return words(global_work_); }
  uint64_t* value_ptr(const Slot& s, uint32_t core);

  Counter counter(const Slot& s, uint32_t core = 0) { return {value_ptr(s, core)}; }
  Gauge gauge(const Slot& s, uint32_t core = 0) { return {value_ptr(s, core)}; }
  Histogram histogram(const Slot& s, uint32_t core = 0) { return {value_ptr(s, core)}; }

  // Copy the private values of `core` into the segment under its seqlock.
  void publish(uint32_t core);
  // Same for the global block; also refreshes the heartbeat.
  void publish_global();
  // Tell readers the data plane is alive (publish_global() does this too). Call at least
  // every second; readers call a segment stale after a few seconds of silence.
  void heartbeat();

  // Clean exit: mark the segment stopped, unlink it, unmap.
  void remove();

  uint32_t num_cores() const { return static_cast<uint32_t>(options_.lcore_ids.size()); }
  const std::string& path() const { return path_; }
  const std::string& last_error() const { return error_; }
  bool sealed() const { return base_ != nullptr; }

 private:
  // A private value block: whole cache lines, 64-byte aligned, one allocation per core so
  // no two cores ever share a line.
  struct alignas(64) Line {
    uint64_t w[8];
  };
  using Block = std::vector<Line>;
  static uint64_t* words(Block& b) { return reinterpret_cast<uint64_t*>(b.data()); }
  bool fail(std::string message);
  void close_all();

  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  WriterOptions options_;
  std::vector<Descriptor> descriptors_;
  std::vector<InfoEntry> info_;
  uint32_t core_words_ = 0;
  uint32_t global_words_ = 0;
  unsigned char* base_ = nullptr;
  size_t size_ = 0;
  std::vector<Block> core_work_;
  Block global_work_;
  std::string error_;
};

}  // namespace ws::stats
