// Time is a parameter of the stack: only dataplane/ reads a clock. Protocol code
// receives an Instant and returns deadlines, so tests drive it with a virtual clock.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>

namespace ws {

class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration nanos(int64_t n) { return Duration(n); }
  static constexpr Duration micros(int64_t n) { return Duration(n * 1000); }
  static constexpr Duration millis(int64_t n) { return Duration(n * 1000 * 1000); }
  static constexpr Duration seconds(int64_t n) { return Duration(n * 1000 * 1000 * 1000); }
  static constexpr Duration zero() { return Duration(0); }
  static constexpr Duration max() { return Duration(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t ns() const { return ns_; }
  constexpr int64_t us() const { return ns_ / 1000; }
  constexpr int64_t ms() const { return ns_ / 1000000; }
  constexpr double secs() const { return static_cast<double>(ns_) / 1e9; }

  constexpr Duration operator+(Duration o) const { return Duration(ns_ + o.ns_); }
  constexpr Duration operator-(Duration o) const { return Duration(ns_ - o.ns_); }
  constexpr Duration operator*(int64_t k) const { return Duration(ns_ * k); }
  constexpr Duration operator/(int64_t k) const { return Duration(ns_ / k); }
  constexpr Duration& operator+=(Duration o) {
    ns_ += o.ns_;
    return *this;
  }
  constexpr auto operator<=>(const Duration&) const = default;  // NOLINT(modernize-use-nullptr)

 private:
  constexpr explicit Duration(int64_t ns) : ns_(ns) {}
  int64_t ns_ = 0;
};

// A point on a monotonic clock, nanoseconds from an arbitrary origin.
class Instant {
 public:
  constexpr Instant() = default;
  static constexpr Instant from_ns(uint64_t ns) { return Instant(ns); }
  // "Never": the deadline of something that has no timer armed.
  static constexpr Instant never() { return Instant(std::numeric_limits<uint64_t>::max()); }

  constexpr uint64_t ns() const { return ns_; }
  constexpr bool is_never() const { return ns_ == std::numeric_limits<uint64_t>::max(); }

  constexpr Instant operator+(Duration d) const {
    if (is_never()) return *this;
    return Instant(ns_ + static_cast<uint64_t>(d.ns()));
  }
  constexpr Instant operator-(Duration d) const {
    return Instant(ns_ - static_cast<uint64_t>(d.ns()));
  }
  constexpr Duration operator-(Instant o) const {
    return Duration::nanos(static_cast<int64_t>(ns_ - o.ns_));
  }
  constexpr Instant& operator+=(Duration d) {
    *this = *this + d;
    return *this;
  }
  constexpr auto operator<=>(const Instant&) const = default;  // NOLINT(modernize-use-nullptr)

 private:
  constexpr explicit Instant(uint64_t ns) : ns_(ns) {}
  uint64_t ns_ = 0;
};

inline constexpr Instant earliest(Instant a, Instant b) { return a < b ? a : b; }

}  // namespace ws
