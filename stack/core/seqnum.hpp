// TCP sequence numbers: 32-bit modular arithmetic (RFC 9293 section 3.4).
// Comparisons are only meaningful for values less than 2^31 apart.
#pragma once

#include <cstdint>

namespace ws {

class SeqNum {
 public:
  constexpr SeqNum() = default;
  constexpr explicit SeqNum(uint32_t v) : v_(v) {}
  constexpr uint32_t raw() const { return v_; }

  constexpr SeqNum operator+(uint32_t n) const { return SeqNum(v_ + n); }
  constexpr SeqNum operator-(uint32_t n) const { return SeqNum(v_ - n); }
  constexpr SeqNum& operator+=(uint32_t n) {
    v_ += n;
    return *this;
  }
  // Signed distance from o to this.
  constexpr int32_t operator-(SeqNum o) const { return static_cast<int32_t>(v_ - o.v_); }

  constexpr bool operator==(const SeqNum&) const = default;
  constexpr bool operator<(SeqNum o) const { return (*this - o) < 0; }
  constexpr bool operator<=(SeqNum o) const { return (*this - o) <= 0; }
  constexpr bool operator>(SeqNum o) const { return (*this - o) > 0; }
  constexpr bool operator>=(SeqNum o) const { return (*this - o) >= 0; }

 private:
  uint32_t v_ = 0;
};

inline constexpr SeqNum seq_max(SeqNum a, SeqNum b) { return a > b ? a : b; }
inline constexpr SeqNum seq_min(SeqNum a, SeqNum b) { return a < b ? a : b; }
// a <= x < b, modular.
inline constexpr bool seq_in(SeqNum x, SeqNum a, SeqNum b) { return (x - a) >= 0 && (b - x) > 0; }

}  // namespace ws
