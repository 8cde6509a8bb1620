// The on-disk (in-memory) layout of the stats segment shared by the data plane (writer)
// and wirespeed-control (reader). Both sides map the same file, so everything here is
// plain, fixed-size and trivially copyable; the layout version changes whenever any of
// it does, and a reader refuses a version it does not know instead of guessing.
//
//   offset 0                 SegmentHeader (one page)
//   descriptors_offset       Descriptor[num_descriptors]   written once, before the rename
//   info_offset              InfoEntry[num_info]           written once, before the rename
//   core_blocks_offset       num_cores x (BlockHeader + core_words x u64), core_stride apart
//   global_block_offset      BlockHeader + global_words x u64
//
// See docs/metrics.md for why it is a file and not DPDK telemetry or a memzone.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ws::stats {

inline constexpr char kMagic[8] = {'W', 'S', 'S', 'T', 'A', 'T', 'S', '\0'};
inline constexpr uint32_t kLayoutVersion = 1;

inline constexpr size_t kNameMax = 96;  // bytes including the terminating NUL
inline constexpr size_t kHelpMax = 192;
inline constexpr size_t kLabelKeyMax = 16;
inline constexpr size_t kLabelValueMax = 48;
inline constexpr size_t kMaxLabels = 4;
inline constexpr size_t kInfoKeyMax = 64;
inline constexpr size_t kInfoValueMax = 192;
inline constexpr uint32_t kMaxCores = 256;
inline constexpr uint32_t kMaxDescriptors = 8192;
inline constexpr uint32_t kMaxInfo = 1024;

// Histograms: 64 log2 buckets of raw integer units (for example nanoseconds).
// Bucket b holds values v with 2^(b-1) < v <= 2^b; bucket 0 holds 0 and 1; bucket 63 holds
// everything above 2^62. After the buckets come the sum and the count of observations.
inline constexpr uint32_t kHistogramBuckets = 64;
inline constexpr uint32_t kHistogramWords = kHistogramBuckets + 2;
inline constexpr uint32_t kHistogramSumWord = kHistogramBuckets;
inline constexpr uint32_t kHistogramCountWord = kHistogramBuckets + 1;

enum class MetricType : uint8_t { kCounter = 1, kGauge = 2, kHistogram = 3 };

// Who writes a metric, and how a reader turns the per-core copies into series.
enum class Scope : uint8_t {
  kGlobal = 0,          // one value in the global block, written by one (non-fast-path) thread
  kPerCoreSum = 1,      // one value per core; readers export the sum over cores
  kPerCoreLabeled = 2,  // one value per core; readers export one series per core, label `core`
};

enum class SegmentState : uint32_t { kCreating = 0, kRunning = 1, kStopped = 2 };

struct SegmentHeader {
  char magic[8];
  uint32_t layout_version;
  uint32_t header_size;         // sizeof(SegmentHeader), a cheap cross-check of the build
  uint64_t total_size;          // file size; the reader checks it against fstat
  uint64_t instance_id;         // random per data-plane start: detects restarts
  int64_t pid;                  // data-plane pid: detects a crashed writer
  uint64_t start_time_unix_ns;  // CLOCK_REALTIME at start, for display
  uint32_t state;               // SegmentState; written with atomic_ref
  uint32_t num_cores;
  uint32_t num_descriptors;
  uint32_t num_info;
  uint32_t core_words;    // u64 words of values per core block
  uint32_t global_words;  // u64 words of values in the global block
  uint64_t descriptors_offset;
  uint64_t info_offset;
  uint64_t core_blocks_offset;
  uint64_t core_stride;  // bytes from one core block to the next (multiple of 64)
  uint64_t global_block_offset;
  uint32_t lcore_ids[kMaxCores];  // label value `core` of each core block
  // Own cache line: written every second by the writer, read by every scrape.
  alignas(64) uint64_t heartbeat_monotonic_ns;  // CLOCK_MONOTONIC; atomic_ref access
  uint64_t heartbeat_unix_ns;
};

struct LabelEntry {
  char key[kLabelKeyMax];
  char value[kLabelValueMax];
};

struct Descriptor {
  char name[kNameMax];
  char help[kHelpMax];
  uint8_t type;   // MetricType
  uint8_t scope;  // Scope
  uint8_t num_labels;
  uint8_t hist_first;  // histogram buckets exported: first..last (upper bound 2^b * scale)
  uint8_t hist_last;
  uint8_t reserved[3];
  uint32_t offset_words;  // in the core block (per-core scopes) or the global block
  uint32_t num_words;     // 1, or kHistogramWords
  double scale;           // raw unit -> base unit, e.g. 1e-9 for nanoseconds -> seconds
  LabelEntry labels[kMaxLabels];
};

struct InfoEntry {
  char key[kInfoKeyMax];
  char value[kInfoValueMax];
};

// Precedes every value block, on its own cache line. `seq` is the seqlock: odd while the
// owner is copying a new snapshot in, even when the block is consistent.
struct alignas(64) BlockHeader {
  uint64_t seq;
  uint64_t published_monotonic_ns;
  uint64_t publish_count;
};

static_assert(sizeof(BlockHeader) == 64);
static_assert(sizeof(Descriptor) % 8 == 0);
static_assert(sizeof(SegmentHeader) <= 4096);
inline constexpr size_t kHeaderBytes = 4096;

}  // namespace ws::stats
