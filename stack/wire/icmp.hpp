// ICMP for IPv4 (RFC 792): the common 8-byte header; echo and destination
// unreachable are what the stack generates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "stack/core/bytes.hpp"

namespace ws::wire {

inline constexpr uint8_t kIcmpEchoReply = 0;
inline constexpr uint8_t kIcmpDestUnreachable = 3;
inline constexpr uint8_t kIcmpEchoRequest = 8;
inline constexpr uint8_t kIcmpTimeExceeded = 11;

// Codes of destination unreachable (RFC 792, RFC 1191 for 4).
inline constexpr uint8_t kIcmpCodePortUnreachable = 3;
inline constexpr uint8_t kIcmpCodeProtoUnreachable = 2;
inline constexpr uint8_t kIcmpCodeFragNeeded = 4;

class IcmpView {
 public:
  static constexpr size_t kHeaderLen = 8;
  static constexpr size_t kTypeOff = 0;
  static constexpr size_t kCodeOff = 1;
  static constexpr size_t kChecksumOff = 2;
  static constexpr size_t kIdOff = 4;   // echo
  static constexpr size_t kSeqOff = 6;  // echo
  static constexpr size_t kMtuOff = 6;  // frag needed (RFC 1191)

  static std::optional<IcmpView> parse(std::span<const uint8_t> b) {
    if (b.size() < kHeaderLen) return std::nullopt;
    return IcmpView(b);
  }
  uint8_t type() const { return b_[kTypeOff]; }
  uint8_t code() const { return b_[kCodeOff]; }
  uint16_t checksum() const { return load_be16(b_.data() + kChecksumOff); }
  uint16_t echo_id() const { return load_be16(b_.data() + kIdOff); }
  uint16_t echo_seq() const { return load_be16(b_.data() + kSeqOff); }
  uint16_t next_hop_mtu() const { return load_be16(b_.data() + kMtuOff); }
  // Data after the 8-byte header (echo payload, or the quoted datagram of an error).
  std::span<const uint8_t> body() const { return b_.subspan(kHeaderLen); }
  std::span<const uint8_t> bytes() const { return b_; }

 private:
  explicit IcmpView(std::span<const uint8_t> b) : b_(b) {}
  std::span<const uint8_t> b_;
};

// Writes the 8-byte header with `rest` as bytes 4..7, then computes the checksum
// over header + `body_len` bytes that the caller has already placed after it.
void emit_icmp(uint8_t* out, uint8_t type, uint8_t code, uint32_t rest, size_t body_len);

}  // namespace ws::wire
