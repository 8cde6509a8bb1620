#include "stack/ipsec/replay.hpp"

#include <bit>

namespace ws::ipsec {

namespace {
// With the check off, ESN still needs a window to place the high half: half the low space.
constexpr uint64_t kGuessWindowWhenOff = uint64_t{1} << 31;
}  // namespace

ReplayWindow::ReplayWindow(uint32_t size, bool esn)
    : size_(size > kMaxSize ? kMaxSize : size),
      esn_(esn),
      words_(std::bit_ceil(size_ / kWordBits + 2)) {}

bool ReplayWindow::infer(uint32_t low, EspSeq& out) const {
  if (!esn_) {
    out = EspSeq(low);
    return true;
  }
  const uint64_t w = size_ != 0 ? size_ : kGuessWindowWhenOff;
  const uint32_t tl = static_cast<uint32_t>(top_);
  const uint32_t th = static_cast<uint32_t>(top_ >> 32);
  // The window's bottom, Tl - W + 1, within the low 32-bit space (it may wrap).
  const uint32_t bottom = static_cast<uint32_t>(tl - w + 1);
  if (tl >= w - 1) {
    // Case A: the window lies inside one 2^32 subspace. Below it means the next subspace.
    if (low >= bottom) {
      out = EspSeq::from_halves(th, low);
    } else {
      if (th == UINT32_MAX) return false;
      out = EspSeq::from_halves(th + 1, low);
    }
    return true;
  }
  // Case B: the window spans the end of the previous subspace and the start of this one.
  if (low >= bottom) {
    if (th == 0) return false;  // before the first subspace: nothing was ever sent there
    out = EspSeq::from_halves(th - 1, low);
  } else {
    out = EspSeq::from_halves(th, low);
  }
  return true;
}

ReplayVerdict ReplayWindow::check(EspSeq seq) const {
  const uint64_t s = seq.value();
  if (s == 0) return ReplayVerdict::outside_window;  // never sent (RFC 4303 3.3.3)
  if (size_ == 0 || s > top_) return ReplayVerdict::ok;
  if (top_ - s >= size_) return ReplayVerdict::outside_window;
  const uint64_t b = bit_index(s);
  return (bits_[b / kWordBits] >> (b % kWordBits)) & 1 ? ReplayVerdict::replayed
                                                       : ReplayVerdict::ok;
}

void ReplayWindow::advance(uint64_t s) {
  const uint64_t from = top_ / kWordBits;
  const uint64_t to = s / kWordBits;
  const uint64_t steps = to - from < words_ ? to - from : words_;
  for (uint64_t i = 1; i <= steps; ++i) bits_[(from + i) & (words_ - 1)] = 0;
  top_ = s;
}

ReplayVerdict ReplayWindow::accept(EspSeq seq) {
  const ReplayVerdict v = check(seq);
  if (v != ReplayVerdict::ok) return v;
  const uint64_t s = seq.value();
  if (s > top_) {
    if (size_ == 0) {
      top_ = s;
      return v;
    }
    advance(s);
  }
  if (size_ != 0) {
    const uint64_t b = bit_index(s);
    bits_[b / kWordBits] |= uint64_t{1} << (b % kWordBits);
  }
  return v;
}

}  // namespace ws::ipsec
