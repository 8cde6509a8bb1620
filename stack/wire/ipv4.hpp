// IPv4 header (RFC 791 section 3.1). The view only guarantees the fixed 20 bytes;
// the input path validates version, IHL, lengths and checksum step by step so that
// each failure is counted under its own reason (see iface/ipv4_input.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "stack/core/addr.hpp"
#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"

namespace ws::wire {

inline constexpr uint8_t kIpProtoIcmp = 1;
inline constexpr uint8_t kIpProtoTcp = 6;
inline constexpr uint8_t kIpProtoUdp = 17;

class Ipv4View {
 public:
  static constexpr size_t kMinHeaderLen = 20;
  static constexpr size_t kMaxHeaderLen = 60;  // IHL is 4 bits of 32-bit words
  static constexpr size_t kVerIhlOff = 0;
  static constexpr size_t kTosOff = 1;
  static constexpr size_t kTotalLenOff = 2;
  static constexpr size_t kIdOff = 4;
  static constexpr size_t kFlagsFragOff = 6;
  static constexpr size_t kTtlOff = 8;
  static constexpr size_t kProtoOff = 9;
  static constexpr size_t kChecksumOff = 10;
  static constexpr size_t kSrcOff = 12;
  static constexpr size_t kDstOff = 16;
  static constexpr uint16_t kFlagDf = 0x4000;
  static constexpr uint16_t kFlagMf = 0x2000;
  static constexpr uint16_t kFragOffsetMask = 0x1fff;

  static std::optional<Ipv4View> parse(std::span<const uint8_t> b) {
    if (b.size() < kMinHeaderLen) return std::nullopt;
    return Ipv4View(b);
  }

  uint8_t version() const { return b_[kVerIhlOff] >> 4; }
  uint8_t ihl() const { return b_[kVerIhlOff] & 0x0f; }
  size_t header_len() const { return size_t{ihl()} * 4; }
  uint8_t tos() const { return b_[kTosOff]; }
  uint16_t total_len() const { return load_be16(b_.data() + kTotalLenOff); }
  uint16_t ident() const { return load_be16(b_.data() + kIdOff); }
  bool dont_fragment() const { return (load_be16(b_.data() + kFlagsFragOff) & kFlagDf) != 0; }
  bool more_fragments() const { return (load_be16(b_.data() + kFlagsFragOff) & kFlagMf) != 0; }
  // Offset of this fragment's data in bytes.
  uint32_t frag_offset() const {
    return uint32_t{static_cast<uint16_t>(load_be16(b_.data() + kFlagsFragOff) & kFragOffsetMask)} *
           8;
  }
  bool is_fragment() const { return more_fragments() || frag_offset() != 0; }
  uint8_t ttl() const { return b_[kTtlOff]; }
  uint8_t protocol() const { return b_[kProtoOff]; }
  uint16_t checksum() const { return load_be16(b_.data() + kChecksumOff); }
  Ipv4Addr src() const { return Ipv4Addr{load_be32(b_.data() + kSrcOff)}; }
  Ipv4Addr dst() const { return Ipv4Addr{load_be32(b_.data() + kDstOff)}; }
  // Bytes available in the buffer (may exceed total_len because of Ethernet padding).
  size_t buffer_len() const { return b_.size(); }
  // The header as declared by IHL; caller must have checked header_len() <= buffer_len().
  std::span<const uint8_t> header() const { return b_.first(header_len()); }
  // Payload bounded by total_len; caller must have validated total_len.
  std::span<const uint8_t> payload() const {
    return b_.subspan(header_len(), total_len() - header_len());
  }
  std::span<const uint8_t> bytes() const { return b_; }

 private:
  explicit Ipv4View(std::span<const uint8_t> b) : b_(b) {}
  std::span<const uint8_t> b_;
};

struct Ipv4Repr {
  Ipv4Addr src;
  Ipv4Addr dst;
  uint8_t protocol = 0;
  uint8_t ttl = 64;
  uint8_t tos = 0;
  uint16_t ident = 0;
  bool dont_fragment = true;
  bool more_fragments = false;
  uint32_t frag_offset = 0;  // bytes, multiple of 8
  uint16_t payload_len = 0;
};

// Writes a 20-byte header (no options). The checksum is filled unless
// `leave_checksum_zero` (the NIC computes it). Inline: every packet sent writes one.
inline void emit_ipv4(uint8_t* out, const Ipv4Repr& r, bool leave_checksum_zero = false) {
  out[Ipv4View::kVerIhlOff] = 0x45;
  out[Ipv4View::kTosOff] = r.tos;
  store_be16(out + Ipv4View::kTotalLenOff,
             static_cast<uint16_t>(Ipv4View::kMinHeaderLen + r.payload_len));
  store_be16(out + Ipv4View::kIdOff, r.ident);
  uint16_t ff = static_cast<uint16_t>((r.frag_offset / 8) & Ipv4View::kFragOffsetMask);
  if (r.dont_fragment) ff |= Ipv4View::kFlagDf;
  if (r.more_fragments) ff |= Ipv4View::kFlagMf;
  store_be16(out + Ipv4View::kFlagsFragOff, ff);
  out[Ipv4View::kTtlOff] = r.ttl;
  out[Ipv4View::kProtoOff] = r.protocol;
  store_be16(out + Ipv4View::kChecksumOff, 0);
  store_be32(out + Ipv4View::kSrcOff, r.src.v);
  store_be32(out + Ipv4View::kDstOff, r.dst.v);
  if (!leave_checksum_zero) {
    store_be16(out + Ipv4View::kChecksumOff, internet_checksum({out, Ipv4View::kMinHeaderLen}));
  }
}

}  // namespace ws::wire
