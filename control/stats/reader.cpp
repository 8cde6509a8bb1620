#include "control/stats/reader.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>

#include "control/stats/seqlock.hpp"

namespace ws::stats {
namespace {

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Fixed fields come from another process: never trust the terminating NUL.
template <size_t N>
std::string field(const char (&src)[N]) {
  return std::string(src, strnlen(src, N));
}

const SegmentHeader& header(const unsigned char* base) {
  return *reinterpret_cast<const SegmentHeader*>(base);
}

}  // namespace

std::string_view to_string(Liveness l) {
  switch (l) {
    case Liveness::kAbsent:
      return "absent";
    case Liveness::kInvalid:
      return "invalid";
    case Liveness::kStopped:
      return "stopped";
    case Liveness::kDead:
      return "dead";
    case Liveness::kStale:
      return "stale";
    case Liveness::kLive:
      return "live";
  }
  return "unknown";
}

std::string_view MetricInfo::label(std::string_view key) const {
  for (const auto& [k, v] : labels) {
    if (k == key) return v;
  }
  return {};
}

std::string_view Catalog::info_value(std::string_view key) const {
  for (const auto& [k, v] : info) {
    if (k == key) return v;
  }
  return {};
}

uint64_t Snapshot::value(const MetricInfo& m, uint32_t word) const {
  if (m.scope == Scope::kGlobal) return global[m.offset + word];
  uint64_t total = 0;
  for (const auto& core : cores) total += core[m.offset + word];
  return total;
}

uint64_t Snapshot::core_value(const MetricInfo& m, uint32_t core, uint32_t word) const {
  if (m.scope == Scope::kGlobal) return global[m.offset + word];
  return cores[core][m.offset + word];
}

uint64_t Snapshot::sum(std::string_view name, const Labels& match) const {
  uint64_t total = 0;
  for (const MetricInfo& m : catalog->metrics) {
    if (m.name != name) continue;
    bool ok = true;
    for (const auto& [k, v] : match) ok = ok && m.label(k) == v;
    if (ok) total += value(m);
  }
  return total;
}

Reader::Reader(std::string path, ReaderOptions options)
    : path_(std::move(path)), options_(options) {}

Reader::~Reader() { unmap(); }

void Reader::unmap() {
  if (base_ != nullptr) ::munmap(const_cast<unsigned char*>(base_), size_);
  base_ = nullptr;
  size_ = 0;
  dev_ = 0;
  ino_ = 0;
  catalog_.reset();
}

bool Reader::map_file() {
  unmap();
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error_ = path_ + ": " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(kHeaderBytes)) {
    ::close(fd);
    error_ = path_ + ": too small to be a stats segment";
    return false;
  }
  void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);  // the mapping keeps the file (even once unlinked) alive
  if (p == MAP_FAILED) {
    error_ = path_ + ": mmap: " + std::strerror(errno);
    return false;
  }
  base_ = static_cast<const unsigned char*>(p);
  size_ = static_cast<size_t>(st.st_size);
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  if (!validate_and_load()) {
    // Keep dev/ino so an invalid file is not re-mapped on every scrape.
    ::munmap(p, size_);
    base_ = nullptr;
    catalog_.reset();
    return false;
  }
  return true;
}

// Check every offset and count against the file size before trusting any of it: the file
// belongs to another process and may be from another build.
bool Reader::validate_and_load() {
  const SegmentHeader& h = header(base_);
  auto bad = [&](const char* why) {
    error_ = path_ + ": not a valid stats segment (" + why + ")";
    return false;
  };
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) return bad("bad magic");
  if (h.layout_version != kLayoutVersion) return bad("unsupported layout version");
  if (h.header_size != sizeof(SegmentHeader)) return bad("header size mismatch");
  if (h.total_size != size_) return bad("size mismatch");
  if (h.num_cores == 0 || h.num_cores > kMaxCores) return bad("core count");
  if (h.num_descriptors > kMaxDescriptors || h.num_info > kMaxInfo) return bad("counts");
  auto fits = [&](uint64_t off, uint64_t len) { return off <= size_ && len <= size_ - off; };
  if (!fits(h.descriptors_offset, uint64_t{h.num_descriptors} * sizeof(Descriptor)) ||
      !fits(h.info_offset, uint64_t{h.num_info} * sizeof(InfoEntry))) {
    return bad("table bounds");
  }
  if (h.core_stride < sizeof(BlockHeader) + uint64_t{h.core_words} * 8 || h.core_stride % 64 != 0 ||
      h.core_blocks_offset % 64 != 0 || h.global_block_offset % 64 != 0 ||
      !fits(h.core_blocks_offset, uint64_t{h.num_cores} * h.core_stride) ||
      !fits(h.global_block_offset, sizeof(BlockHeader) + uint64_t{h.global_words} * 8)) {
    return bad("block bounds");
  }

  auto cat = std::make_shared<Catalog>();
  cat->instance_id = h.instance_id;
  cat->pid = h.pid;
  cat->start_time_unix_ns = h.start_time_unix_ns;
  cat->lcore_ids.assign(h.lcore_ids, h.lcore_ids + h.num_cores);
  cat->core_words = h.core_words;
  cat->global_words = h.global_words;
  const auto* descs = reinterpret_cast<const Descriptor*>(base_ + h.descriptors_offset);
  for (uint32_t i = 0; i < h.num_descriptors; ++i) {
    const Descriptor& d = descs[i];
    MetricInfo m;
    m.name = field(d.name);
    m.help = field(d.help);
    m.type = static_cast<MetricType>(d.type);
    m.scope = static_cast<Scope>(d.scope);
    if (d.type < 1 || d.type > 3 || d.scope > 2 || d.num_labels > kMaxLabels) {
      return bad("descriptor fields");
    }
    uint32_t expect_words = m.type == MetricType::kHistogram ? kHistogramWords : 1;
    uint32_t limit = m.scope == Scope::kGlobal ? h.global_words : h.core_words;
    if (d.num_words != expect_words || d.offset_words > limit ||
        d.num_words > limit - d.offset_words) {
      return bad("descriptor offsets");
    }
    if (!(d.scale > 0) || !std::isfinite(d.scale)) return bad("descriptor scale");
    if (m.type == MetricType::kHistogram &&
        (d.hist_first > d.hist_last || d.hist_last >= kHistogramBuckets - 1)) {
      return bad("histogram buckets");
    }
    for (unsigned l = 0; l < d.num_labels; ++l) {
      m.labels.emplace_back(field(d.labels[l].key), field(d.labels[l].value));
    }
    m.offset = d.offset_words;
    m.words = d.num_words;
    m.scale = d.scale;
    m.hist_first = d.hist_first;
    m.hist_last = d.hist_last;
    cat->metrics.push_back(std::move(m));
  }
  const auto* info = reinterpret_cast<const InfoEntry*>(base_ + h.info_offset);
  for (uint32_t i = 0; i < h.num_info; ++i) {
    cat->info.emplace_back(field(info[i].key), field(info[i].value));
  }
  catalog_ = std::move(cat);
  return true;
}

Liveness Reader::refresh() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    unmap();
    error_ = path_ + ": " + std::strerror(errno);
    return liveness_ = Liveness::kAbsent;
  }
  // A restarted data plane renames a new file into place: a new inode means remap.
  bool same_file = st.st_dev == dev_ && st.st_ino == ino_;
  if (!same_file && !map_file()) return liveness_ = Liveness::kInvalid;
  if (base_ == nullptr) return liveness_ = Liveness::kInvalid;  // the same invalid file

  const SegmentHeader& h = header(base_);
  auto state =
      std::atomic_ref<uint32_t>(const_cast<uint32_t&>(h.state)).load(std::memory_order_acquire);
  if (state == static_cast<uint32_t>(SegmentState::kStopped)) return liveness_ = Liveness::kStopped;
  // EPERM means the process exists but belongs to another user: alive.
  if (h.pid <= 0 || (::kill(static_cast<pid_t>(h.pid), 0) != 0 && errno == ESRCH)) {
    return liveness_ = Liveness::kDead;
  }
  if (heartbeat_age_s() > options_.stale_after_s) return liveness_ = Liveness::kStale;
  return liveness_ = Liveness::kLive;
}

double Reader::heartbeat_age_s() const {
  if (base_ == nullptr) return -1.0;
  uint64_t hb =
      std::atomic_ref<uint64_t>(const_cast<uint64_t&>(header(base_).heartbeat_monotonic_ns))
          .load(std::memory_order_acquire);
  uint64_t now = monotonic_ns();
  return now > hb ? static_cast<double>(now - hb) / 1e9 : 0.0;
}

bool Reader::read(Snapshot* out) const {
  if (base_ == nullptr || catalog_ == nullptr) return false;
  const SegmentHeader& h = header(base_);
  out->catalog = catalog_;
  out->cores.assign(h.num_cores, std::vector<uint64_t>(h.core_words));
  out->global.assign(h.global_words, 0);

  auto read_block = [&](uint64_t offset, uint32_t words, uint64_t* dst) {
    const auto* bh = reinterpret_cast<const BlockHeader*>(base_ + offset);
    const auto* src = reinterpret_cast<const uint64_t*>(bh + 1);
    for (int attempt = 0; attempt < options_.max_retries; ++attempt) {
      if (seqlock_try_read(&bh->seq, dst, src, words)) return true;
      if (attempt > 16) sched_yield();  // the writer may be preempted mid-copy
    }
    return false;
  };
  for (uint32_t c = 0; c < h.num_cores; ++c) {
    if (!read_block(h.core_blocks_offset + uint64_t{c} * h.core_stride, h.core_words,
                    out->cores[c].data())) {
      return false;
    }
  }
  if (!read_block(h.global_block_offset, h.global_words, out->global.data())) return false;
  out->taken_monotonic_ns = monotonic_ns();
  return true;
}

}  // namespace ws::stats
