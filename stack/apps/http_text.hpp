// Text helpers shared by the HTTP responder and the HTTP client: header-block framing,
// case-insensitive field names (RFC 9110 5.1), the generated body both sides agree on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace ws::http {

// Generated bodies repeat one 64-byte line of printable text, so any byte of a body of
// any length is known from its offset alone.
inline constexpr size_t kBodyPeriod = 64;
inline constexpr char kBodyLine[kBodyPeriod + 1] =
    "wirespeed generated body 0123456789 abcdefghijklmnopqrstuvwxyz.\n";
static_assert(sizeof(kBodyLine) == kBodyPeriod + 1);

inline char body_byte(uint64_t offset) { return kBodyLine[offset % kBodyPeriod]; }
// True when `data` is the generated body from `offset` on.
bool is_generated_body(uint64_t offset, std::span<const uint8_t> data);

// iequals, trim and find_end run on every request and header field the responder parses:
// inline, so that the compiler can fold them into the parser (tests/bench/http_cost).
inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The index just past the blank line that ends a header block ("\n\r\n" or "\n\n"),
// searching for its first '\n' from `from`; 0 when the block is not complete.
inline size_t find_end(const char* p, size_t n, size_t from) {
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

// A Content-Length value (RFC 9110 8.6: 1*DIGIT); false when it is not one or too large.
bool parse_length(std::string_view value, uint64_t& out);
// True when the comma-separated Connection field value holds `token` (RFC 9110 7.6.1).
bool has_token(std::string_view value, std::string_view token);

}  // namespace ws::http
