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
