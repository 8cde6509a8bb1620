// ESP packet format (RFC 4303 section 2): SPI and sequence number in clear, then the IV, the
// encrypted payload and trailer (padding, pad length, next header), then the ICV.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "stack/core/bytes.hpp"

namespace ws::wire {

inline constexpr uint8_t kIpProtoEsp = 50;
inline constexpr uint8_t kIpProtoIpv4 = 4;  // ESP next header of a tunnelled IPv4 packet

class EspView {
 public:
  static constexpr size_t kHeaderLen = 8;
  static constexpr size_t kSpiOff = 0;
  static constexpr size_t kSeqOff = 4;
  static constexpr size_t kTrailerLen = 2;  // pad length, next header

  static std::optional<EspView> parse(std::span<const uint8_t> b) {
    if (b.size() < kHeaderLen) return std::nullopt;
    return EspView(b);
  }
  uint32_t spi() const { return load_be32(b_.data() + kSpiOff); }
  uint32_t seq_low() const { return load_be32(b_.data() + kSeqOff); }

 private:
  explicit EspView(std::span<const uint8_t> b) : b_(b) {}
  std::span<const uint8_t> b_;
};

// The decrypted trailer at the end of `plain` (payload || padding || pad length || next
// header). nullopt when the pad length runs past the start of the payload.
struct EspTrailer {
  uint8_t pad_len = 0;
  uint8_t next_header = 0;
  size_t payload_len = 0;
  // RFC 4303 2.4: the default padding is 1, 2, 3, ...; a receiver may check it.
  static std::optional<EspTrailer> parse(std::span<const uint8_t> plain) {
    if (plain.size() < EspView::kTrailerLen) return std::nullopt;
    EspTrailer t;
    t.pad_len = plain[plain.size() - 2];
    t.next_header = plain[plain.size() - 1];
    if (size_t{t.pad_len} + EspView::kTrailerLen > plain.size()) return std::nullopt;
    t.payload_len = plain.size() - EspView::kTrailerLen - t.pad_len;
    return t;
  }
  static bool padding_valid(std::span<const uint8_t> plain, const EspTrailer& t) {
    for (size_t i = 0; i < t.pad_len; ++i) {
      if (plain[t.payload_len + i] != static_cast<uint8_t>(i + 1)) return false;
    }
    return true;
  }
};

}  // namespace ws::wire
