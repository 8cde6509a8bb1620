#include "control/stats/writer.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>

#include "control/stats/clock.hpp"
#include "control/stats/seqlock.hpp"

namespace ws::stats {
namespace {

uint64_t now_ns(clockid_t clock) { return clock_ns(clock); }

constexpr uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

// Copy into a fixed, NUL-terminated field (callers have validated the length).
template <size_t N>
void put(char (&dst)[N], std::string_view src) {
  std::memset(dst, 0, N);
  std::memcpy(dst, src.data(), std::min(src.size(), N - 1));
}

std::string series_key(const Descriptor& d) {
  std::string key = d.name;
  for (unsigned i = 0; i < d.num_labels; ++i) {
    key += '\x1f';
    key += d.labels[i].key;
    key += '=';
    key += d.labels[i].value;
  }
  return key;
}

std::vector<std::string_view> label_keys(const Descriptor& d) {
  std::vector<std::string_view> keys;
  for (unsigned i = 0; i < d.num_labels; ++i) keys.emplace_back(d.labels[i].key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

uint64_t random_instance_id() {
  std::random_device rd;
  uint64_t id = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ now_ns(CLOCK_MONOTONIC);
  return id == 0 ? 1 : id;
}

}  // namespace

Writer::~Writer() {
  if (!sealed() && !tmp_path_.empty()) ::unlink(tmp_path_.c_str());
  close_all();
}

void Writer::close_all() {
  if (base_ != nullptr) ::munmap(base_, size_);
  base_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool Writer::fail(std::string message) {
  error_ = std::move(message);
  return false;
}

bool Writer::create(std::string path, WriterOptions options) {
  if (fd_ >= 0 || sealed()) return fail("stats segment already created");
  if (path.empty()) return fail("stats segment path is empty");
  if (options.lcore_ids.empty() || options.lcore_ids.size() > kMaxCores) {
    return fail("stats segment needs 1.." + std::to_string(kMaxCores) + " cores");
  }
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return fail("cannot create " + dir.string() + ": " + ec.message());
  }
  path_ = std::move(path);
  options_ = std::move(options);
  // A private name first; seal() renames it over whatever a previous instance left.
  tmp_path_ = path_ + ".tmp." + std::to_string(::getpid());
  fd_ = ::open(tmp_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return fail("cannot create " + tmp_path_ + ": " + std::strerror(errno));
  ::fchmod(fd_, 0644);  // readable by a control process running as another user
  return true;
}

std::optional<Slot> Writer::register_metric(const MetricSpec& spec) {
  auto bad = [&](const std::string& why) -> std::optional<Slot> {
    error_ = "metric " + std::string(spec.name) + ": " + why;
    return std::nullopt;
  };
  if (fd_ < 0) return bad("create() first");
  if (sealed()) return bad("registration is closed after seal()");
  if (descriptors_.size() >= kMaxDescriptors) return bad("too many series");
  if (spec.type != MetricType::kCounter && spec.type != MetricType::kGauge &&
      spec.type != MetricType::kHistogram) {
    return bad("unknown type");
  }
  if (spec.scope != Scope::kGlobal && spec.scope != Scope::kPerCoreSum &&
      spec.scope != Scope::kPerCoreLabeled) {
    return bad("unknown scope");
  }
  if (std::string e = validate_metric_name(spec.name, spec.type); !e.empty()) return bad(e);
  if (std::string e = validate_labels(spec.labels, spec.scope); !e.empty()) return bad(e);
  if (spec.help.empty() || spec.help.size() >= kHelpMax ||
      spec.help.find('\n') != std::string_view::npos) {
    return bad("help must be one line of 1.." + std::to_string(kHelpMax - 1) + " characters");
  }
  const HistogramSpec& h = spec.histogram;
  if (spec.type == MetricType::kHistogram &&
      (h.first > h.last || h.last >= kHistogramBuckets - 1 || !(h.scale > 0))) {
    return bad("histogram buckets must satisfy first <= last < 63 and scale > 0");
  }

  Descriptor d{};
  put(d.name, spec.name);
  put(d.help, spec.help);
  d.type = static_cast<uint8_t>(spec.type);
  d.scope = static_cast<uint8_t>(spec.scope);
  d.num_labels = static_cast<uint8_t>(spec.labels.size());
  for (size_t i = 0; i < spec.labels.size(); ++i) {
    put(d.labels[i].key, spec.labels[i].key);
    put(d.labels[i].value, spec.labels[i].value);
  }
  if (!(spec.scale > 0) || !std::isfinite(spec.scale)) return bad("scale must be > 0");
  d.scale = spec.scale;
  if (spec.type == MetricType::kHistogram) {
    d.hist_first = h.first;
    d.hist_last = h.last;
    d.scale = h.scale;
  }
  // One family = one name: everything but the label values must agree.
  std::string key = series_key(d);
  for (const Descriptor& other : descriptors_) {
    if (std::string_view(other.name) != spec.name) continue;
    if (series_key(other) == key) return bad("series registered twice");
    if (other.type != d.type || other.scope != d.scope ||
        std::string_view(other.help) != std::string_view(d.help) ||
        label_keys(other) != label_keys(d)) {
      return bad("same name registered with another type, help, scope or label keys");
    }
  }
  d.num_words = spec.type == MetricType::kHistogram ? kHistogramWords : 1;
  uint32_t& words = spec.scope == Scope::kGlobal ? global_words_ : core_words_;
  d.offset_words = words;
  words += d.num_words;
  descriptors_.push_back(d);
  return Slot{d.offset_words, spec.scope, spec.type};
}

bool Writer::set_info(std::string_view key, std::string_view value) {
  if (fd_ < 0 || sealed()) return fail("set_info: only between create() and seal()");
  if (std::string e = validate_info_key(key); !e.empty()) return fail(e);
  if (value.size() >= kInfoValueMax) return fail("info " + std::string(key) + ": value too long");
  for (InfoEntry& e : info_) {
    if (std::string_view(e.key) == key) {
      put(e.value, value);
      return true;
    }
  }
  if (info_.size() >= kMaxInfo) return fail("too many info entries");
  InfoEntry e{};
  put(e.key, key);
  put(e.value, value);
  info_.push_back(e);
  return true;
}

bool Writer::seal() {
  if (fd_ < 0) return fail("seal: create() first");
  if (sealed()) return fail("seal: already sealed");
  const uint64_t ncores = options_.lcore_ids.size();
  const uint64_t desc_off = kHeaderBytes;
  const uint64_t info_off = round_up(desc_off + descriptors_.size() * sizeof(Descriptor), 64);
  const uint64_t core_off = round_up(info_off + info_.size() * sizeof(InfoEntry), 4096);
  const uint64_t core_stride = sizeof(BlockHeader) + round_up(uint64_t{core_words_} * 8, 64);
  const uint64_t global_off = core_off + ncores * core_stride;
  const uint64_t total =
      round_up(global_off + sizeof(BlockHeader) + round_up(uint64_t{global_words_} * 8, 64), 4096);

  if (::ftruncate(fd_, static_cast<off_t>(total)) != 0) {
    return fail("cannot size " + tmp_path_ + ": " + std::strerror(errno));
  }
  void* p = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) return fail("cannot map " + tmp_path_ + ": " + std::strerror(errno));
  auto* base = static_cast<unsigned char*>(p);

  auto* hdr = reinterpret_cast<SegmentHeader*>(base);
  std::memcpy(hdr->magic, kMagic, sizeof(kMagic));
  hdr->layout_version = kLayoutVersion;
  hdr->header_size = sizeof(SegmentHeader);
  hdr->total_size = total;
  hdr->instance_id = random_instance_id();
  hdr->pid = ::getpid();
  hdr->start_time_unix_ns = now_ns(CLOCK_REALTIME);
  hdr->num_cores = static_cast<uint32_t>(ncores);
  hdr->num_descriptors = static_cast<uint32_t>(descriptors_.size());
  hdr->num_info = static_cast<uint32_t>(info_.size());
  hdr->core_words = core_words_;
  hdr->global_words = global_words_;
  hdr->descriptors_offset = desc_off;
  hdr->info_offset = info_off;
  hdr->core_blocks_offset = core_off;
  hdr->core_stride = core_stride;
  hdr->global_block_offset = global_off;
  for (uint64_t i = 0; i < ncores; ++i) hdr->lcore_ids[i] = options_.lcore_ids[i];
  if (!descriptors_.empty()) {
    std::memcpy(base + desc_off, descriptors_.data(), descriptors_.size() * sizeof(Descriptor));
  }
  if (!info_.empty()) std::memcpy(base + info_off, info_.data(), info_.size() * sizeof(InfoEntry));
  hdr->heartbeat_monotonic_ns = now_ns(CLOCK_MONOTONIC);
  hdr->heartbeat_unix_ns = now_ns(CLOCK_REALTIME);
  hdr->state = static_cast<uint32_t>(SegmentState::kRunning);

  // The rename is the commit point: a reader opening `path_` sees all of the above.
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    ::munmap(p, total);
    return fail("cannot rename " + tmp_path_ + " to " + path_ + ": " + std::strerror(errno));
  }
  base_ = base;
  size_ = total;

  auto lines = [](uint32_t words) { return std::max<size_t>(1, (words + 7) / 8); };
  core_work_.assign(ncores, Block(lines(core_words_), Line{}));
  global_work_.assign(lines(global_words_), Line{});
  return true;
}

uint64_t* Writer::value_ptr(const Slot& s, uint32_t core) {
  return s.scope == Scope::kGlobal ? global_values() + s.offset : core_values(core) + s.offset;
}

void Writer::publish(uint32_t core) {
  auto* hdr = reinterpret_cast<SegmentHeader*>(base_);
  auto* bh = reinterpret_cast<BlockHeader*>(base_ + hdr->core_blocks_offset +
                                            uint64_t{core} * hdr->core_stride);
  seqlock_publish(&bh->seq, reinterpret_cast<uint64_t*>(bh + 1), core_values(core), core_words_);
  std::atomic_ref<uint64_t>(bh->published_monotonic_ns)
      .store(now_ns(CLOCK_MONOTONIC), std::memory_order_relaxed);
  // Single writer: a load and a store, not a locked read-modify-write.
  std::atomic_ref<uint64_t> count(bh->publish_count);
  count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void Writer::publish_global() {
  auto* hdr = reinterpret_cast<SegmentHeader*>(base_);
  auto* bh = reinterpret_cast<BlockHeader*>(base_ + hdr->global_block_offset);
  seqlock_publish(&bh->seq, reinterpret_cast<uint64_t*>(bh + 1), global_values(), global_words_);
  std::atomic_ref<uint64_t>(bh->published_monotonic_ns)
      .store(now_ns(CLOCK_MONOTONIC), std::memory_order_relaxed);
  heartbeat();
}

void Writer::heartbeat() {
  if (base_ == nullptr) return;
  auto* hdr = reinterpret_cast<SegmentHeader*>(base_);
  std::atomic_ref<uint64_t>(hdr->heartbeat_unix_ns)
      .store(now_ns(CLOCK_REALTIME), std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(hdr->heartbeat_monotonic_ns)
      .store(now_ns(CLOCK_MONOTONIC), std::memory_order_release);
}

void Writer::remove() {
  if (base_ != nullptr) {
    auto* hdr = reinterpret_cast<SegmentHeader*>(base_);
    std::atomic_ref<uint32_t>(hdr->state)
        .store(static_cast<uint32_t>(SegmentState::kStopped), std::memory_order_release);
    // Unlink only if the path still names our file: never delete a successor's segment.
    struct stat mine {
    }, there{};
    if (::fstat(fd_, &mine) == 0 && ::stat(path_.c_str(), &there) == 0 &&
        mine.st_ino == there.st_ino && mine.st_dev == there.st_dev) {
      ::unlink(path_.c_str());
    }
  } else if (!tmp_path_.empty()) {
    ::unlink(tmp_path_.c_str());
  }
  close_all();
}

}  // namespace ws::stats
