// Link and network addresses as strong types (host byte order inside Ipv4Addr).
#pragma once

#include <array>
#include <compare>
#include <cstdint>
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

struct Endpoint {
  Ipv4Addr addr;
  uint16_t port = 0;
  std::string to_string() const;
  // "10.77.0.2:9"
  static std::optional<Endpoint> parse(std::string_view s);
  constexpr auto operator<=>(const Endpoint&) const = default;
};

}  // namespace ws
