// ARP for IPv4 over Ethernet (RFC 826).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "stack/core/addr.hpp"
#include "stack/core/bytes.hpp"

namespace ws::wire {

enum class ArpOp : uint16_t { kRequest = 1, kReply = 2 };

enum class ArpError : uint8_t { kNone, kTruncated, kBadFormat };

class ArpView {
 public:
  static constexpr size_t kLen = 28;
  static constexpr size_t kHtypeOff = 0;
  static constexpr size_t kPtypeOff = 2;
  static constexpr size_t kHlenOff = 4;
  static constexpr size_t kPlenOff = 5;
  static constexpr size_t kOpOff = 6;
  static constexpr size_t kShaOff = 8;
  static constexpr size_t kSpaOff = 14;
  static constexpr size_t kThaOff = 18;
  static constexpr size_t kTpaOff = 24;

  // Accepts only Ethernet/IPv4 ARP (htype 1, ptype 0x0800, hlen 6, plen 4).
  static std::optional<ArpView> parse(std::span<const uint8_t> b, ArpError* err = nullptr) {
    auto fail = [&](ArpError e) {
      if (err) *err = e;
      return std::nullopt;
    };
    if (b.size() < kLen) return fail(ArpError::kTruncated);
    if (load_be16(b.data() + kHtypeOff) != 1 || load_be16(b.data() + kPtypeOff) != 0x0800 ||
        b[kHlenOff] != 6 || b[kPlenOff] != 4)
      return fail(ArpError::kBadFormat);
    if (err) *err = ArpError::kNone;
    return ArpView(b);
  }

  uint16_t op() const { return load_be16(b_.data() + kOpOff); }
  MacAddr sender_mac() const { return MacAddr::from_bytes(b_.data() + kShaOff); }
  Ipv4Addr sender_ip() const { return Ipv4Addr{load_be32(b_.data() + kSpaOff)}; }
  MacAddr target_mac() const { return MacAddr::from_bytes(b_.data() + kThaOff); }
  Ipv4Addr target_ip() const { return Ipv4Addr{load_be32(b_.data() + kTpaOff)}; }

 private:
  explicit ArpView(std::span<const uint8_t> b) : b_(b) {}
  std::span<const uint8_t> b_;
};

struct ArpRepr {
  ArpOp op = ArpOp::kRequest;
  MacAddr sender_mac;
  Ipv4Addr sender_ip;
  MacAddr target_mac;
  Ipv4Addr target_ip;
};

// Writes the 28-byte ARP body into out (which must hold ArpView::kLen bytes).
inline size_t emit_arp(uint8_t* out, const ArpRepr& r) {
  store_be16(out + ArpView::kHtypeOff, 1);
  store_be16(out + ArpView::kPtypeOff, 0x0800);
  out[ArpView::kHlenOff] = 6;
  out[ArpView::kPlenOff] = 4;
  store_be16(out + ArpView::kOpOff, static_cast<uint16_t>(r.op));
  r.sender_mac.to_bytes(out + ArpView::kShaOff);
  store_be32(out + ArpView::kSpaOff, r.sender_ip.v);
  r.target_mac.to_bytes(out + ArpView::kThaOff);
  store_be32(out + ArpView::kTpaOff, r.target_ip.v);
  return ArpView::kLen;
}

}  // namespace ws::wire
