#include "stack/core/addr.hpp"

#include <charconv>
#include <cstdio>

namespace ws {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Parses a decimal number in [0, max] that spans the whole of s.
bool parse_dec(std::string_view s, uint32_t max, uint32_t& out) {
  if (s.empty() || s.size() > 10) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  // No leading zeros in dotted quads beyond a single "0": avoids octal ambiguity.
  if (s.size() > 1 && s[0] == '0') return false;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v > max) return false;
  out = static_cast<uint32_t>(v);
  return true;
}

}  // namespace

std::string MacAddr::to_string() const {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4],
                b[5]);
  return buf;
}

std::optional<MacAddr> MacAddr::parse(std::string_view s) {
  if (s.size() != 17) return std::nullopt;
  MacAddr m;
  for (size_t i = 0; i < 6; ++i) {
    int hi = hex_digit(s[i * 3]);
    int lo = hex_digit(s[i * 3 + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    if (i < 5 && s[i * 3 + 2] != ':') return std::nullopt;
    m.b[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return m;
}

std::string Ipv4Addr::to_string() const {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", (v >> 24) & 0xff, (v >> 16) & 0xff, (v >> 8) & 0xff,
                v & 0xff);
  return buf;
}

std::optional<Ipv4Addr> Ipv4Addr::parse(std::string_view s) {
  uint32_t out = 0;
  for (int i = 0; i < 4; ++i) {
    size_t dot = s.find('.');
    std::string_view part = (i < 3) ? s.substr(0, dot) : s;
    if (i < 3 && dot == std::string_view::npos) return std::nullopt;
    uint32_t octet = 0;
    if (!parse_dec(part, 255, octet)) return std::nullopt;
    out = (out << 8) | octet;
    if (i < 3) s.remove_prefix(dot + 1);
  }
  return Ipv4Addr{out};
}

std::string Ipv4Cidr::to_string() const {
  return addr.to_string() + "/" + std::to_string(prefix_len);
}

std::optional<Ipv4Cidr> Ipv4Cidr::parse(std::string_view s) {
  size_t slash = s.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto a = Ipv4Addr::parse(s.substr(0, slash));
  uint32_t len = 0;
  if (!a || !parse_dec(s.substr(slash + 1), 32, len)) return std::nullopt;
  return Ipv4Cidr{*a, static_cast<uint8_t>(len)};
}

std::string Ipv6Addr::to_string() const {
  uint16_t g[8];
  for (size_t i = 0; i < 8; ++i) g[i] = static_cast<uint16_t>((b[2 * i] << 8) | b[2 * i + 1]);
  // RFC 5952 4.2: compress the longest run of two or more zero groups, the first on a tie.
  int best = -1;
  int best_len = 1;
  for (int i = 0; i < 8;) {
    int j = i;
    while (j < 8 && g[j] == 0) ++j;
    if (j - i > best_len) {
      best = i;
      best_len = j - i;
    }
    i = j == i ? i + 1 : j;
  }
  std::string out;
  char buf[8];
  for (int i = 0; i < 8; ++i) {
    if (i == best) {
      out += "::";
      i += best_len - 1;
      continue;
    }
    if (!out.empty() && out.back() != ':') out += ':';
    std::snprintf(buf, sizeof buf, "%x", g[i]);
    out += buf;
  }
  return out;
}

std::optional<Ipv6Addr> Ipv6Addr::parse(std::string_view s) {
  uint16_t head[8];
  uint16_t tail[8];
  size_t nhead = 0;
  size_t ntail = 0;
  bool gap = false;
  if (s.size() < 2 || s.size() > 39) return std::nullopt;
  if (s.substr(0, 2) == "::") {
    gap = true;
    s.remove_prefix(2);
  } else if (s[0] == ':') {
    return std::nullopt;
  }
  while (!s.empty()) {
    size_t n = 0;
    uint32_t v = 0;
    while (n < s.size() && n < 5 && hex_digit(s[n]) >= 0) v = v * 16 + hex_digit(s[n++]);
    if (n == 0 || n > 4) return std::nullopt;
    if (nhead + ntail == 8) return std::nullopt;
    (gap ? tail[ntail++] : head[nhead++]) = static_cast<uint16_t>(v);
    s.remove_prefix(n);
    if (s.empty()) break;
    if (s[0] != ':') return std::nullopt;
    s.remove_prefix(1);
    if (!s.empty() && s[0] == ':') {
      if (gap) return std::nullopt;  // at most one "::"
      gap = true;
      s.remove_prefix(1);
    } else if (s.empty()) {
      return std::nullopt;  // a trailing single ':'
    }
  }
  // "::" stands for at least one zero group (RFC 4291 2.2 item 2).
  if (gap ? nhead + ntail > 7 : nhead != 8) return std::nullopt;
  Ipv6Addr a;
  for (size_t i = 0; i < nhead; ++i) {
    a.b[2 * i] = static_cast<uint8_t>(head[i] >> 8);
    a.b[2 * i + 1] = static_cast<uint8_t>(head[i]);
  }
  for (size_t i = 0; i < ntail; ++i) {
    size_t at = 8 - ntail + i;
    a.b[2 * at] = static_cast<uint8_t>(tail[i] >> 8);
    a.b[2 * at + 1] = static_cast<uint8_t>(tail[i]);
  }
  return a;
}

std::string Ipv6Cidr::to_string() const {
  return addr.to_string() + "/" + std::to_string(prefix_len);
}

std::optional<Ipv6Cidr> Ipv6Cidr::parse(std::string_view s) {
  size_t slash = s.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto a = Ipv6Addr::parse(s.substr(0, slash));
  uint32_t len = 0;
  if (!a || !parse_dec(s.substr(slash + 1), 128, len)) return std::nullopt;
  return Ipv6Cidr{*a, static_cast<uint8_t>(len)};
}

std::string IpAddr::to_string() const { return is_v4() ? v4().to_string() : v6().to_string(); }

std::optional<IpAddr> IpAddr::parse(std::string_view s) {
  if (auto a = Ipv4Addr::parse(s)) return IpAddr(*a);
  if (auto a = Ipv6Addr::parse(s); a && !IpAddr::reserved_v6(*a)) return IpAddr(*a);
  return std::nullopt;
}

std::string Endpoint::to_string() const {
  const std::string a = addr.to_string();
  return (addr.is_v4() ? a : "[" + a + "]") + ":" + std::to_string(port);
}

std::optional<Endpoint> Endpoint::parse(std::string_view s) {
  size_t colon = s.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = s.substr(0, colon);
  std::optional<IpAddr> a;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    auto v6 = Ipv6Addr::parse(host.substr(1, host.size() - 2));
    if (v6 && !IpAddr::reserved_v6(*v6)) a = IpAddr(*v6);
  } else {
    if (auto v4 = Ipv4Addr::parse(host)) a = IpAddr(*v4);
  }
  uint32_t port = 0;
  if (!a || !parse_dec(s.substr(colon + 1), 65535, port)) return std::nullopt;
  return Endpoint{*a, static_cast<uint16_t>(port)};
}

}  // namespace ws
