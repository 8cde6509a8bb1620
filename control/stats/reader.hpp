// ws::stats::Reader — the control process's read-only view of a data plane's segment.
//
// A Reader is bound to a path, not to a file: refresh() notices when the file appears,
// disappears, or is replaced by a restarted data plane (a new inode and instance id), and
// says whether the writer is alive. read() copies a consistent snapshot of every value
// block, retrying any block whose seqlock changed underneath it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "control/stats/layout.hpp"

namespace ws::stats {

enum class Liveness {
  kAbsent,   // no segment file: the data plane has not started, or exited cleanly
  kInvalid,  // a file that is not a segment of this layout version
  kStopped,  // the writer marked it stopped (clean exit in progress)
  kDead,     // the writer's pid is gone (crash; the file was left behind)
  kStale,    // the writer is there but has not sent a heartbeat for too long (hung)
  kLive,
};
std::string_view to_string(Liveness l);

using Labels = std::vector<std::pair<std::string, std::string>>;

struct MetricInfo {
  std::string name;
  std::string help;
  MetricType type = MetricType::kCounter;
  Scope scope = Scope::kGlobal;
  Labels labels;
  uint32_t offset = 0;
  uint32_t words = 1;
  double scale = 1.0;  // exported value = raw x scale
  uint8_t hist_first = 0;
  uint8_t hist_last = 0;

  std::string_view label(std::string_view key) const;
};

// Everything fixed for the lifetime of one data-plane instance.
struct Catalog {
  uint64_t instance_id = 0;
  int64_t pid = 0;
  uint64_t start_time_unix_ns = 0;
  std::vector<uint32_t> lcore_ids;
  uint32_t core_words = 0;
  uint32_t global_words = 0;
  std::vector<MetricInfo> metrics;
  std::vector<std::pair<std::string, std::string>> info;

  std::string_view info_value(std::string_view key) const;  // "" when absent
};

struct Snapshot {
  std::shared_ptr<const Catalog> catalog;
  std::vector<std::vector<uint64_t>> cores;  // [core block][word]
  std::vector<uint64_t> global;
  uint64_t taken_monotonic_ns = 0;

  // Word `word` of a metric: the global value, or the sum over cores.
  uint64_t value(const MetricInfo& m, uint32_t word = 0) const;
  uint64_t core_value(const MetricInfo& m, uint32_t core, uint32_t word = 0) const;
  // Sum of a named metric over all series whose labels include `match` (all if empty).
  uint64_t sum(std::string_view name, const Labels& match = {}) const;
};

struct ReaderOptions {
  double stale_after_s = 5.0;  // heartbeat silence after which a live pid counts as hung
  int max_retries = 10000;     // seqlock retries per block before read() gives up
};

class Reader {
 public:
  explicit Reader(std::string path, ReaderOptions options = {});
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  // Re-examine the path: (re)map a new file, drop a vanished one, judge the writer.
  Liveness refresh();
  Liveness liveness() const { return liveness_; }
  // Catalog of the mapped segment (null when nothing valid is mapped).
  std::shared_ptr<const Catalog> catalog() const { return catalog_; }
  // Copy a consistent snapshot. Needs a mapped segment (any liveness but absent/invalid).
  bool read(Snapshot* out) const;
  // Seconds since the last heartbeat (negative when nothing is mapped).
  double heartbeat_age_s() const;

  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }

 private:
  bool map_file();
  void unmap();
  bool validate_and_load();

  std::string path_;
  ReaderOptions options_;
  const unsigned char* base_ = nullptr;
  size_t size_ = 0;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  Liveness liveness_ = Liveness::kAbsent;
  std::shared_ptr<const Catalog> catalog_;
  std::string error_;
};

}  // namespace ws::stats
