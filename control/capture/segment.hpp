// The capture segment file (layout.hpp): created and sized by the data plane at start,
// mapped by `wirespeed-control capture`. Only the mapping lives here; what goes through
// the rings is the business of ring.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "control/capture/layout.hpp"

namespace ws::capture {

struct PortDesc {
  std::string name;
  uint32_t mtu = 0;
  uint16_t rx_queues = 0;
  uint16_t tx_queues = 0;
};

class Segment {
 public:
  Segment() = default;
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Data plane: a new segment at `path` (owner-only: frames carry payload), replacing one a
  // previous instance left. False with `error`.
  bool create(const std::string& path, uint32_t cores, uint64_t ring_bytes,
              const std::vector<PortDesc>& ports, std::string& error);
  // Reader: maps an existing segment read-write (it writes the request and the tails).
  bool open(const std::string& path, std::string& error);
  // Data plane: removes the file (at exit).
  void remove();

  Header* header() const { return header_; }
  RingHeader* ring(uint32_t core) const;
  uint8_t* ring_data(uint32_t core) const;
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  // Maps size_ bytes of fd_; on failure closes everything and says why.
  bool map(const std::string& path, std::string& error);
  void unmap();

  std::string path_;
  int fd_ = -1;
  void* base_ = nullptr;
  uint64_t size_ = 0;
  Header* header_ = nullptr;
};

}  // namespace ws::capture
