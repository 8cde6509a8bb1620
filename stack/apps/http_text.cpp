#include "stack/apps/http_text.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace ws::http {

namespace {

constexpr std::array<char, kBodyRun + kBodyPeriod> kRun = [] {
  std::array<char, kBodyRun + kBodyPeriod> r{};
  for (size_t i = 0; i < r.size(); ++i) r[i] = kBodyLine[i % kBodyPeriod];
  return r;
}();

}  // namespace

const char* body_run() { return kRun.data(); }

bool is_generated_body(uint64_t offset, std::span<const uint8_t> data) {
  // kBodyRun is a multiple of the period: every piece starts at the same phase.
  static_assert(kBodyRun % kBodyPeriod == 0);
  const char* from = kRun.data() + offset % kBodyPeriod;
  for (size_t i = 0; i < data.size(); i += kBodyRun) {
    const size_t n = std::min(kBodyRun, data.size() - i);
    if (std::memcmp(data.data() + i, from, n) != 0) return false;
  }
  return true;
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
