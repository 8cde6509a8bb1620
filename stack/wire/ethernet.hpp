// Ethernet II header, with at most one 802.1Q tag (IEEE 802.1Q section 9).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "stack/core/addr.hpp"
#include "stack/core/bytes.hpp"

namespace ws::wire {

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeArp = 0x0806;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86dd;

class EthernetView {
 public:
  static constexpr size_t kHeaderLen = 14;
  static constexpr size_t kVlanTagLen = 4;
  static constexpr size_t kDstOff = 0;
  static constexpr size_t kSrcOff = 6;
  static constexpr size_t kTypeOff = 12;

  // nullopt when the frame is shorter than its header (including a VLAN tag).
  static std::optional<EthernetView> parse(std::span<const uint8_t> frame) {
    if (frame.size() < kHeaderLen) return std::nullopt;
    size_t hl = kHeaderLen;
    if (load_be16(frame.data() + kTypeOff) == kEtherTypeVlan) {
      if (frame.size() < kHeaderLen + kVlanTagLen) return std::nullopt;
      hl += kVlanTagLen;
    }
    return EthernetView(frame, hl);
  }

  MacAddr dst() const { return MacAddr::from_bytes(b_.data() + kDstOff); }
  MacAddr src() const { return MacAddr::from_bytes(b_.data() + kSrcOff); }
  bool has_vlan() const { return hl_ != kHeaderLen; }
  // Tag control information (PCP, DEI, VID) when tagged.
  uint16_t vlan_tci() const { return has_vlan() ? load_be16(b_.data() + 14) : 0; }
  uint16_t vlan_id() const { return vlan_tci() & 0x0fff; }
  // EtherType of the payload (the inner one when tagged).
  uint16_t ethertype() const { return load_be16(b_.data() + hl_ - 2); }
  size_t header_len() const { return hl_; }
  std::span<const uint8_t> payload() const { return b_.subspan(hl_); }

 private:
  EthernetView(std::span<const uint8_t> b, size_t hl) : b_(b), hl_(hl) {}
  std::span<const uint8_t> b_;
  size_t hl_;
};

// Writes an untagged header; `out` must hold kHeaderLen bytes. Returns the length.
inline size_t emit_ethernet(uint8_t* out, MacAddr dst, MacAddr src, uint16_t ethertype) {
  dst.to_bytes(out + EthernetView::kDstOff);
  src.to_bytes(out + EthernetView::kSrcOff);
  store_be16(out + EthernetView::kTypeOff, ethertype);
  return EthernetView::kHeaderLen;
}

// Writes a header with one 802.1Q tag; `out` must hold 18 bytes.
inline size_t emit_ethernet_vlan(uint8_t* out, MacAddr dst, MacAddr src, uint16_t tci,
                                 uint16_t ethertype) {
  dst.to_bytes(out + EthernetView::kDstOff);
  src.to_bytes(out + EthernetView::kSrcOff);
  store_be16(out + 12, kEtherTypeVlan);
  store_be16(out + 14, tci);
  store_be16(out + 16, ethertype);
  return EthernetView::kHeaderLen + EthernetView::kVlanTagLen;
}

}  // namespace ws::wire
