// ESP sequence numbers on the receive side: the anti-replay window (RFC 4303 section 3.4.3)
// kept as a ring of 64-bit words in the manner of RFC 6479, and the guess of the high half of
// an extended sequence number from its transmitted low half (RFC 4303 appendix A2.2).
#pragma once

#include <array>
#include <cstdint>

namespace ws::ipsec {

// A full ESP sequence number. Without ESN the high half is always zero. Never modular: an SA
// stops before its space ends (RFC 4303 3.3.3), so plain comparison is right.
class EspSeq {
 public:
  constexpr EspSeq() = default;
  constexpr explicit EspSeq(uint64_t v) : v_(v) {}
  static constexpr EspSeq from_halves(uint32_t high, uint32_t low) {
    return EspSeq(uint64_t{high} << 32 | low);
  }
  constexpr uint64_t value() const { return v_; }
  constexpr uint32_t low() const { return static_cast<uint32_t>(v_); }
  constexpr uint32_t high() const { return static_cast<uint32_t>(v_ >> 32); }
  constexpr auto operator<=>(const EspSeq&) const = default;

 private:
  uint64_t v_ = 0;
};

enum class ReplayVerdict { ok, replayed, outside_window };

class ReplayWindow {
 public:
  static constexpr uint32_t kMaxSize = 4096;

  // size 0 turns the check off (RFC 4303 3.4.3 lets the receiver disable it).
  ReplayWindow(uint32_t size, bool esn);

  // The full sequence number of a packet whose header carried `low`: with ESN the high half is
  // guessed from the window (appendix A2.2); nullopt-like `false` when the guess would fall
  // below zero (older than anything the SA can have sent).
  bool infer(uint32_t low, EspSeq& out) const;

  // Before decryption: would this number be accepted?
  ReplayVerdict check(EspSeq s) const;
  // After the ICV verified: accept the number, unless an earlier packet of the same burst took
  // it meanwhile (so check again). The window moves only here.
  ReplayVerdict accept(EspSeq s);

  EspSeq top() const { return EspSeq(top_); }
  uint32_t size() const { return size_; }

 private:
  static constexpr uint32_t kWordBits = 64;
  // RFC 6479: one spare word so that moving the window clears whole words.
  static constexpr uint32_t kMaxWords = 128;  // a power of two >= kMaxSize / 64 + 1

  uint64_t bit_index(uint64_t s) const { return s & (uint64_t{words_} * kWordBits - 1); }
  void advance(uint64_t s);

  uint32_t size_;
  bool esn_;
  uint32_t words_;    // a power of two
  uint64_t top_ = 0;  // highest accepted number; 0 = none yet (the first ESP number is 1)
  std::array<uint64_t, kMaxWords> bits_{};
};

}  // namespace ws::ipsec
