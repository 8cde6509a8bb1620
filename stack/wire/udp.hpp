// UDP header (RFC 768).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "stack/core/bytes.hpp"

namespace ws::wire {

class UdpView {
 public:
  static constexpr size_t kHeaderLen = 8;
  static constexpr size_t kSrcPortOff = 0;
  static constexpr size_t kDstPortOff = 2;
  static constexpr size_t kLengthOff = 4;
  static constexpr size_t kChecksumOff = 6;

  static std::optional<UdpView> parse(std::span<const uint8_t> b) {
    if (b.size() < kHeaderLen) return std::nullopt;
    return UdpView(b);
  }
  uint16_t src_port() const { return load_be16(b_.data() + kSrcPortOff); }
  uint16_t dst_port() const { return load_be16(b_.data() + kDstPortOff); }
  // Header + data, as declared.
  uint16_t length() const { return load_be16(b_.data() + kLengthOff); }
  uint16_t checksum() const { return load_be16(b_.data() + kChecksumOff); }
  // The declared length fits the buffer and covers the header.
  bool length_valid() const { return length() >= kHeaderLen && length() <= b_.size(); }
  // Caller must have checked length_valid().
  std::span<const uint8_t> payload() const { return b_.subspan(kHeaderLen, length() - kHeaderLen); }
  std::span<const uint8_t> datagram() const { return b_.first(length()); }

 private:
  explicit UdpView(std::span<const uint8_t> b) : b_(b) {}
  std::span<const uint8_t> b_;
};

// Writes the header with a zero checksum (filled later by the IP output path).
inline size_t emit_udp(uint8_t* out, uint16_t src_port, uint16_t dst_port, uint16_t payload_len) {
  store_be16(out + UdpView::kSrcPortOff, src_port);
  store_be16(out + UdpView::kDstPortOff, dst_port);
  store_be16(out + UdpView::kLengthOff, static_cast<uint16_t>(UdpView::kHeaderLen + payload_len));
  store_be16(out + UdpView::kChecksumOff, 0);
  return UdpView::kHeaderLen;
}

}  // namespace ws::wire
