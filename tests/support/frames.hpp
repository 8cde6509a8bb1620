// Frame builders for tests: Ethernet + ARP, Ethernet + IPv4 + ICMP echo / UDP /
// raw payload, written with the stack/wire emit functions and a knob to corrupt
// each field. Also small checks for frames the stack sent.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "stack/core/addr.hpp"
#include "stack/wire/arp.hpp"

namespace ws::test {

// Ethernet header. `vlan_tci` adds an 802.1Q tag.
struct EthSpec {
  EthSpec() = default;
  EthSpec(MacAddr d, MacAddr s, std::optional<uint16_t> type = {}, std::optional<uint16_t> tci = {})
      : dst(d), src(s), ethertype(type), vlan_tci(tci) {}
  MacAddr dst;
  MacAddr src;
  std::optional<uint16_t> ethertype;  // default: what the payload builder implies
  std::optional<uint16_t> vlan_tci;
};

// An ARP body (RFC 826) and overrides for its fixed fields.
struct ArpSpec {
  ArpSpec() = default;
  explicit ArpSpec(const wire::ArpRepr& r) : arp(r) {}
  wire::ArpRepr arp;
  std::optional<uint16_t> htype;
  std::optional<uint16_t> ptype;
  std::optional<uint8_t> hlen;
  std::optional<uint8_t> plen;
  std::optional<uint16_t> op_raw;  // an opcode outside ArpOp
};

// IPv4 header fields and the corruptions tests need. Unset overrides leave the
// header valid; `pad` appends bytes after the datagram (Ethernet padding).
struct Ipv4Spec {
  Ipv4Addr src;
  Ipv4Addr dst;
  uint8_t protocol = 0;  // set by the UDP/ICMP builders unless `protocol_override`
  uint8_t ttl = 64;
  uint8_t tos = 0;
  uint16_t ident = 0x1234;
  bool dont_fragment = true;
  bool more_fragments = false;
  uint32_t frag_offset = 0;      // bytes, multiple of 8
  std::vector<uint8_t> options;  // raised to a multiple of 4 with zeros
  std::optional<uint8_t> protocol_override;
  std::optional<uint8_t> version;     // default 4
  std::optional<uint8_t> ihl;         // default from options
  std::optional<uint16_t> total_len;  // default header + payload
  std::optional<uint16_t> checksum;   // default: correct
  bool corrupt_checksum = false;      // flips the correct checksum
  size_t pad = 0;                     // zero bytes after the datagram
};

struct UdpSpec {
  uint16_t src_port = 40000;
  uint16_t dst_port = 7;
  std::optional<uint16_t> length;    // default header + payload
  std::optional<uint16_t> checksum;  // default: correct (use 0 for "no checksum")
  bool corrupt_checksum = false;
};

struct IcmpSpec {
  uint8_t type = 8;  // echo request
  uint8_t code = 0;
  uint16_t id = 0x4242;
  uint16_t seq = 1;
  std::optional<uint32_t> rest;  // bytes 4..7 verbatim instead of id/seq
  bool corrupt_checksum = false;
};

// Ethernet + ARP, padded to the 60-byte minimum unless `pad_to_min` is false.
std::vector<uint8_t> arp_frame(const EthSpec& eth, const ArpSpec& arp, bool pad_to_min = true);

// Ethernet + IPv4 around an arbitrary L4 payload (`ip.protocol` is used as is).
std::vector<uint8_t> ipv4_frame(const EthSpec& eth, const Ipv4Spec& ip,
                                std::span<const uint8_t> l4);

// Ethernet + IPv4 + UDP. The checksum is computed over the pseudo header with the
// addresses in `ip`, before any IPv4 corruption is applied.
std::vector<uint8_t> udp_frame(const EthSpec& eth, const Ipv4Spec& ip, const UdpSpec& udp,
                               std::span<const uint8_t> payload);

// Ethernet + IPv4 + ICMP (echo request by default).
std::vector<uint8_t> icmp_frame(const EthSpec& eth, const Ipv4Spec& ip, const IcmpSpec& icmp,
                                std::span<const uint8_t> payload);

// Deterministic payload: byte i = (seed + i * 7) mod 251.
std::vector<uint8_t> pattern(size_t n, uint8_t seed = 0);

// Checks on frames: the IPv4 header checksum, and the UDP / ICMP checksums of an
// untagged Ethernet + IPv4 frame (bounded by the IP total length, padding ignored).
bool ipv4_checksum_ok(std::span<const uint8_t> frame);
bool udp_checksum_ok(std::span<const uint8_t> frame);
bool icmp_checksum_ok(std::span<const uint8_t> frame);

}  // namespace ws::test
