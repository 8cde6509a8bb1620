// Link and network addresses as strong types (host byte order inside Ipv4Addr).
#pragma once

#include <array>
#include <bit>
#include <compare>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace ws {

struct MacAddr {
  std::array<uint8_t, 6> b{};

  static constexpr MacAddr broadcast() { return MacAddr{{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}; }
  constexpr bool is_broadcast() const {
    return b[0] == 0xff && b[1] == 0xff && b[2] == 0xff && b[3] == 0xff && b[4] == 0xff &&
           b[5] == 0xff;
  }
  constexpr bool is_multicast() const { return (b[0] & 0x01) != 0; }
  constexpr bool is_zero() const { return (b[0] | b[1] | b[2] | b[3] | b[4] | b[5]) == 0; }
  static MacAddr from_bytes(const uint8_t* p) {
    MacAddr m;
    for (size_t i = 0; i < 6; ++i) m.b[i] = p[i];
    return m;
  }
  void to_bytes(uint8_t* p) const {
    for (size_t i = 0; i < 6; ++i) p[i] = b[i];
  }
  std::string to_string() const;
  // "02:00:00:00:00:01" (case-insensitive hex, colon separated).
  static std::optional<MacAddr> parse(std::string_view s);
  constexpr auto operator<=>(const MacAddr&) const = default;
};

struct Ipv4Addr {
  uint32_t v = 0;  // host byte order

  static constexpr Ipv4Addr any() { return Ipv4Addr{0}; }
  static constexpr Ipv4Addr broadcast() { return Ipv4Addr{0xffffffffu}; }
  static constexpr Ipv4Addr from_octets(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    return Ipv4Addr{(uint32_t{a} << 24) | (uint32_t{b} << 16) | (uint32_t{c} << 8) | d};
  }
  constexpr bool is_any() const { return v == 0; }
  constexpr bool is_broadcast() const { return v == 0xffffffffu; }
  constexpr bool is_multicast() const { return (v >> 28) == 0xe; }
  constexpr bool is_loopback() const { return (v >> 24) == 127; }
  std::string to_string() const;
  static std::optional<Ipv4Addr> parse(std::string_view s);
  constexpr auto operator<=>(const Ipv4Addr&) const = default;
};

struct Ipv4Cidr {
  Ipv4Addr addr;
  uint8_t prefix_len = 32;

  constexpr uint32_t mask() const {
    return prefix_len == 0 ? 0u : (0xffffffffu << (32 - prefix_len));
  }
  constexpr Ipv4Addr network() const { return Ipv4Addr{addr.v & mask()}; }
  constexpr Ipv4Addr directed_broadcast() const { return Ipv4Addr{addr.v | ~mask()}; }
  constexpr bool contains(Ipv4Addr a) const { return (a.v & mask()) == (addr.v & mask()); }
  std::string to_string() const;
  // "10.77.0.1/24"
  static std::optional<Ipv4Cidr> parse(std::string_view s);
  constexpr auto operator<=>(const Ipv4Cidr&) const = default;
};

// An IPv6 address (RFC 4291), bytes in network order.
struct Ipv6Addr {
  std::array<uint8_t, 16> b{};

  static Ipv6Addr from_bytes(const uint8_t* p) {
    Ipv6Addr a;
    std::memcpy(a.b.data(), p, 16);
    return a;
  }
  void to_bytes(uint8_t* p) const { std::memcpy(p, b.data(), 16); }
  // Bytes 8*i .. 8*i+7 as a number: half(0) is the routing prefix of a /64, half(1) the
  // interface identifier. Every packet sent and received compares and hashes these, so
  // at run time they are one load and a byte swap, not a loop over bytes.
  constexpr uint64_t half(size_t i) const {
    if (!std::is_constant_evaluated() && std::endian::native == std::endian::little) {
      uint64_t w;
      std::memcpy(&w, b.data() + 8 * i, 8);
      return __builtin_bswap64(w);
    }
    uint64_t w = 0;
    for (size_t k = 0; k < 8; ++k) w = w << 8 | b[8 * i + k];
    return w;
  }
  static constexpr Ipv6Addr from_halves(uint64_t hi, uint64_t lo) {
    Ipv6Addr a;
    if (!std::is_constant_evaluated() && std::endian::native == std::endian::little) {
      hi = __builtin_bswap64(hi);
      lo = __builtin_bswap64(lo);
      std::memcpy(a.b.data(), &hi, 8);
      std::memcpy(a.b.data() + 8, &lo, 8);
      return a;
    }
    for (size_t i = 0; i < 8; ++i) {
      a.b[i] = static_cast<uint8_t>(hi >> (56 - 8 * i));
      a.b[8 + i] = static_cast<uint8_t>(lo >> (56 - 8 * i));
    }
    return a;
  }
  // ff02::1, all nodes on the link (RFC 4291 2.7.1).
  static constexpr Ipv6Addr all_nodes() {
    return Ipv6Addr{{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};
  }
  // ff02::2, all routers on the link.
  static constexpr Ipv6Addr all_routers() {
    return Ipv6Addr{{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}};
  }
  constexpr bool is_unspecified() const { return half(0) == 0 && half(1) == 0; }
  constexpr bool is_loopback() const { return half(0) == 0 && half(1) == 1; }
  constexpr bool is_multicast() const { return b[0] == 0xff; }
  constexpr bool is_link_local() const { return b[0] == 0xfe && (b[1] & 0xc0) == 0x80; }
  // ::ffff:0:0/96 (RFC 4291 2.5.5.2): an IPv4 address, never valid on an IPv6 wire.
  constexpr bool is_v4_mapped() const { return half(0) == 0 && half(1) >> 32 == 0xffff; }
  // ff02::1:ffXX:XXXX, the solicited-node multicast address (RFC 4291 2.7.1).
  constexpr Ipv6Addr solicited_node() const {
    return Ipv6Addr{{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, b[13], b[14], b[15]}};
  }
  // In ff02::1:ff00:0/104, the solicited-node groups.
  constexpr bool is_solicited_node() const {
    const Ipv6Addr p = Ipv6Addr{}.solicited_node();
    for (size_t i = 0; i < 13; ++i) {
      if (b[i] != p.b[i]) return false;
    }
    return true;
  }
  // The Ethernet address a multicast IPv6 address maps to: 33:33 and its low 32 bits
  // (RFC 2464 section 7).
  constexpr MacAddr multicast_mac() const {
    return MacAddr{{0x33, 0x33, b[12], b[13], b[14], b[15]}};
  }
  // RFC 5952 text: lower case, the longest run of zero groups compressed.
  std::string to_string() const;
  // RFC 4291 2.2 text forms 1 and 2 ("2001:db8::1"); the dotted-quad tail of form 3 is
  // not accepted.
  static std::optional<Ipv6Addr> parse(std::string_view s);
  constexpr auto operator<=>(const Ipv6Addr&) const = default;
  // Two word compares (the defaulted one compares byte by byte, through memcmp).
  constexpr bool operator==(const Ipv6Addr& o) const {
    return half(0) == o.half(0) && half(1) == o.half(1);
  }
};

struct Ipv6Cidr {
  Ipv6Addr addr;
  uint8_t prefix_len = 128;

  // Routing asks this of every packet sent: two masked 64-bit compares.
  constexpr bool contains(const Ipv6Addr& a) const {
    const unsigned hi_bits = prefix_len < 64 ? prefix_len : 64;
    const unsigned lo_bits = prefix_len > 64 ? prefix_len - 64u : 0;
    return ((a.half(0) ^ addr.half(0)) & mask(hi_bits)) == 0 &&
           ((a.half(1) ^ addr.half(1)) & mask(lo_bits)) == 0;
  }
  std::string to_string() const;
  // "2001:db8::1/64"
  static std::optional<Ipv6Cidr> parse(std::string_view s);
  constexpr auto operator<=>(const Ipv6Cidr&) const = default;

 private:
  // The top `bits` (0..64) of a word.
  static constexpr uint64_t mask(unsigned bits) {
    return bits == 0 ? 0 : ~uint64_t{0} << (64 - bits);
  }
};

// An IPv4 or IPv6 address as the transports see it (one type for both families): the
// 128-bit number of an IPv6 address, an IPv4 address as its IPv4-mapped form
// ::ffff:a.b.c.d (RFC 4291 2.5.5.2). Everything in ::/64 counts as IPv4: besides the
// mapped block that is the unspecified and loopback addresses and the deprecated
// IPv4-compatible ones (RFC 4291 2.5.5.1), none a peer on a link, so TCP and UDP over
// IPv6 refuse such a source and parse() refuses such text. Two words, not 16 bytes, and
// a family test of one comparison keep the IPv4 fast path on integers.
struct IpAddr {
  uint64_t hi = 0;
  uint64_t lo = kV4Tag;  // 0.0.0.0

  static constexpr uint64_t kV4Tag = uint64_t{0xffff} << 32;

  constexpr IpAddr() = default;
  constexpr IpAddr(Ipv4Addr a) : lo(kV4Tag | a.v) {}  // NOLINT: implicit by design
  constexpr IpAddr(const Ipv6Addr& a) : hi(a.half(0)), lo(a.half(1)) {}  // NOLINT: implicit

  constexpr bool is_v4() const { return hi == 0; }
  constexpr bool is_v6() const { return !is_v4(); }
  constexpr Ipv4Addr v4() const { return Ipv4Addr{static_cast<uint32_t>(lo)}; }
  constexpr Ipv6Addr v6() const { return Ipv6Addr::from_halves(hi, lo); }
  // 0.0.0.0 or ::
  constexpr bool is_any() const { return hi == 0 && (lo == kV4Tag || lo == 0); }
  // In ::/64, so not an IPv6 peer's address (see above).
  static constexpr bool reserved_v6(const Ipv6Addr& a) { return a.half(0) == 0; }
  // The address in network byte order (4 or 16 bytes) at `p`; returns the byte count.
  size_t to_bytes(uint8_t* p) const {
    if (is_v4()) {
      for (size_t i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(lo >> (24 - 8 * i));
      return 4;
    }
    v6().to_bytes(p);
    return 16;
  }
  // Dotted quad or RFC 5952 text.
  std::string to_string() const;
  // Either family's text form.
  static std::optional<IpAddr> parse(std::string_view s);
  constexpr auto operator<=>(const IpAddr&) const = default;
};

// Counters kept per address family are arrays indexed by family_index(): 0 IPv4, 1 IPv6.
// The index is the result of one comparison (no branch, no lookup), so a per-family
// count costs the fast path no more than a single one.
inline constexpr size_t kFamilies = 2;
inline constexpr size_t kFamilyIpv4 = 0;
inline constexpr size_t kFamilyIpv6 = 1;
inline constexpr const char* kFamilyNames[kFamilies] = {"ipv4", "ipv6"};
constexpr size_t family_index(const IpAddr& a) { return static_cast<size_t>(a.is_v6()); }
using FamilyCount = std::array<uint64_t, kFamilies>;
constexpr uint64_t family_total(const FamilyCount& c) { return c[0] + c[1]; }

// Which families a service answers (`family:` in its config): both, or one.
enum class AddrFamily : uint8_t { kAny, kIpv4, kIpv6 };
constexpr bool family_admits(AddrFamily f, const IpAddr& a) {
  return f == AddrFamily::kAny || (f == AddrFamily::kIpv4) == a.is_v4();
}

struct Endpoint {
  IpAddr addr;
  uint16_t port = 0;
  // "10.77.0.2:9", "[2001:db8::2]:7" (RFC 3986 3.2.2 brackets)
  std::string to_string() const;
  static std::optional<Endpoint> parse(std::string_view s);
  constexpr auto operator<=>(const Endpoint&) const = default;
};

}  // namespace ws
