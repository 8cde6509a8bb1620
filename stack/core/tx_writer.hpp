// Writing a frame's payload into its buffers: a contiguous first piece (the rest
// of the first segment after the headers), then the further segments of a
// gathered frame (TxBuf::segs). Where the L4 checksum is computed in software,
// the writer sums the bytes in the same pass that copies them (csum_copy), so a
// payload byte is read once on its way out.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "stack/core/checksum.hpp"
#include "stack/core/packet.hpp"

namespace ws {

class TxWriter {
 public:
  TxWriter(std::span<uint8_t> first, std::span<const TxSeg> more, bool sum)
      : cur_(first), more_(more), sum_on_(sum) {}

  // Appends `src` at the current position, across segment boundaries. False if
  // the frame has no room for all of it (what fits is written).
  bool write(std::span<const uint8_t> src) {
    while (!src.empty()) {
      if (pos_ == cur_.size()) {
        if (next_ == more_.size()) return false;
        cur_ = {more_[next_].data, more_[next_].len};
        ++next_;
        pos_ = 0;
        continue;
      }
      size_t n = std::min(src.size(), cur_.size() - pos_);
      uint8_t* d = cur_.data() + pos_;
      if (sum_on_) {
        // A piece that starts at an odd offset of the payload (a segment
        // boundary or a ring wrap there) is added byte-swapped (csum_add_at).
        sum_ = csum_add_at(sum_, csum_copy(d, src.first(n)), written_);
      } else {
        std::memcpy(d, src.data(), n);
      }
      pos_ += n;
      written_ += n;
      src = src.subspan(n);
    }
    return true;
  }

  size_t written() const { return written_; }
  // One's-complement partial sum (csum_partial form) of every byte written, as
  // if they started at an even offset; 0 when summing is off.
  uint32_t sum() const { return sum_; }
  bool summing() const { return sum_on_; }

 private:
  std::span<uint8_t> cur_;
  size_t pos_ = 0;
  std::span<const TxSeg> more_;
  size_t next_ = 0;
  bool sum_on_;
  uint32_t sum_ = 0;
  size_t written_ = 0;
};

}  // namespace ws
