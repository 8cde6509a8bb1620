#include "stack/apps/http_text.hpp"

#include <cstring>

namespace ws::http {

bool is_generated_body(uint64_t offset, std::span<const uint8_t> data) {
  size_t i = 0;
  // Up to the next period boundary byte by byte, then whole lines with memcmp.
  while (i < data.size() && (offset + i) % kBodyPeriod != 0) {
    if (data[i] != static_cast<uint8_t>(body_byte(offset + i))) return false;
    ++i;
  }
  for (; i + kBodyPeriod <= data.size(); i += kBodyPeriod) {
    if (std::memcmp(data.data() + i, kBodyLine, kBodyPeriod) != 0) return false;
  }
  const size_t rest = data.size() - i;
  return rest == 0 || std::memcmp(data.data() + i, kBodyLine, rest) == 0;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

size_t find_end(const char* p, size_t n, size_t from) {
  size_t i = from;
  while (i < n) {
    const void* hit = std::memchr(p + i, '\n', n - i);
    if (!hit) return 0;
    i = static_cast<size_t>(static_cast<const char*>(hit) - p);
    if (i + 1 < n && p[i + 1] == '\n') return i + 2;
    if (i + 2 < n && p[i + 1] == '\r' && p[i + 2] == '\n') return i + 3;
    ++i;
  }
  return 0;
}

bool parse_length(std::string_view value, uint64_t& out) {
  if (value.empty() || value.size() > 18) return false;
  uint64_t v = 0;
  for (char ch : value) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + static_cast<uint64_t>(ch - '0');
  }
  out = v;
  return true;
}

bool has_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    if (iequals(trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace ws::http
