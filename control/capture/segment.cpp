#include "control/capture/segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <new>

namespace ws::capture {

namespace {

bool power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

Segment::~Segment() { unmap(); }

bool Segment::map(const std::string& path, std::string& error) {
  base_ = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (base_ != MAP_FAILED) return true;
  base_ = nullptr;
  error = "cannot map " + path + ": " + std::strerror(errno);
  unmap();
  return false;
}

void Segment::unmap() {
  if (base_ != nullptr) ::munmap(base_, size_);
  base_ = nullptr;
  header_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool Segment::create(const std::string& path, uint32_t cores, uint64_t ring_bytes,
                     const std::vector<PortDesc>& ports, std::string& error) {
  if (cores == 0 || cores > kMaxCores || ports.size() > kMaxPorts || !power_of_two(ring_bytes) ||
      ring_bytes < 4096) {
    error = "capture segment: bad geometry";
    return false;
  }
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  // A new inode each start: a reader still mapping a previous instance's file keeps its
  // own copy and notices the data plane's pid is gone.
  ::unlink(path.c_str());
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    error = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  size_ = segment_size(cores, ring_bytes);
  if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    error = "cannot size " + path + ": " + std::strerror(errno);
    unmap();
    return false;
  }
  if (!map(path, error)) return false;
  path_ = path;
  header_ = new (base_) Header{};
  header_->version = kVersion;
  header_->cores = cores;
  header_->ring_bytes = ring_bytes;
  header_->ring_offset = rings_offset();
  header_->ring_stride = ring_stride(ring_bytes);
  header_->dataplane_pid = ::getpid();
  header_->ports_count = static_cast<uint32_t>(ports.size());
  for (size_t i = 0; i < ports.size(); ++i) {
    PortEntry& e = header_->ports[i];
    std::strncpy(e.name, ports[i].name.c_str(), kNameMax - 1);
    e.mtu = ports[i].mtu;
    e.rx_queues = ports[i].rx_queues;
    e.tx_queues = ports[i].tx_queues;
  }
  for (uint32_t c = 0; c < cores; ++c) new (ring(c)) RingHeader{};
  std::atomic_thread_fence(std::memory_order_release);
  header_->magic = kMagic;
  return true;
}

bool Segment::open(const std::string& path, std::string& error) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0) {
    int e = errno;
    error = e == ENOENT ? "no capture segment at " + path +
                              ": is the data plane running with this config's file_prefix?"
            : e == EACCES ? "cannot open " + path +
                                ": permission denied (capture as the data plane's user, "
                                "usually root)"
                          : "cannot open " + path + ": " + std::strerror(e);
    return false;
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || static_cast<uint64_t>(st.st_size) < sizeof(Header)) {
    error = path + " is not a capture segment (too short)";
    unmap();
    return false;
  }
  size_ = static_cast<uint64_t>(st.st_size);
  if (!map(path, error)) return false;
  header_ = static_cast<Header*>(base_);
  const Header& h = *header_;
  if (h.magic != kMagic || h.version != kVersion || h.cores == 0 || h.cores > kMaxCores ||
      h.ports_count > kMaxPorts || !power_of_two(h.ring_bytes) ||
      h.ring_stride != ring_stride(h.ring_bytes) ||
      h.ring_offset + uint64_t{h.cores} * h.ring_stride > size_) {
    error = path + " is not a capture segment of this version";
    unmap();
    return false;
  }
  path_ = path;
  return true;
}

void Segment::remove() {
  if (!path_.empty() && header_ != nullptr) ::unlink(path_.c_str());
  unmap();
}

RingHeader* Segment::ring(uint32_t core) const {
  auto* base = static_cast<uint8_t*>(base_);
  return reinterpret_cast<RingHeader*>(base + header_->ring_offset +
                                       uint64_t{core} * header_->ring_stride);
}

uint8_t* Segment::ring_data(uint32_t core) const {
  return reinterpret_cast<uint8_t*>(ring(core)) + sizeof(RingHeader);
}

}  // namespace ws::capture
