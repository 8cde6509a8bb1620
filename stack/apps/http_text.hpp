// Text helpers shared by the HTTP responder and the HTTP client: header-block framing,
// case-insensitive field names (RFC 9110 5.1), the generated body both sides agree on.
#pragma once

#include <array>
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
// The generated body from offset 0, kBodyRun + kBodyPeriod bytes of it: the bytes of a body
// from any offset, up to kBodyRun of them, are one contiguous piece of it, starting at
// offset % kBodyPeriod (one send or one memcmp).
inline constexpr size_t kBodyRun = size_t{64} * 1024;
const char* body_run();
// True when `data` is the generated body from `offset` on.
bool is_generated_body(uint64_t offset, std::span<const uint8_t> data);

// iequals, trim, find_end and next_field run on every request and header field the
// responder parses and every response the client reads: inline, so that the compiler can
// fold them into the parsers (tests/bench/http_cost, http_client_cost).
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

// RFC 9110 5.6.2 token characters, a table: the method and every field name of every
// message are checked character by character (a strchr per '-' of a name cost more).
inline constexpr std::array<bool, 256> kTchar = [] {
  std::array<bool, 256> t{};
  for (int ch = '0'; ch <= '9'; ++ch) t[static_cast<size_t>(ch)] = true;
  for (int ch = 'a'; ch <= 'z'; ++ch) t[static_cast<size_t>(ch)] = true;
  for (int ch = 'A'; ch <= 'Z'; ++ch) t[static_cast<size_t>(ch)] = true;
  for (char ch : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(ch)] = true;
  return t;
}();

inline bool is_tchar(char ch) { return kTchar[static_cast<unsigned char>(ch)]; }

// One line of a header block, after the start line: a field, the empty line that ends the
// block, a malformed line, or a line not complete in the bytes given.
enum class Line { kField, kEnd, kBad, kMore };

// The line at `pos` of p[0, n); a field (RFC 9112 5: field-name ":" OWS field-value OWS,
// the name a token) sets `name` and `value` (trimmed). `pos` moves past the line unless it
// is kBad or kMore. A line ends at LF (CRLF or a bare LF, RFC 9112 2.2); a name that is not
// a token, or a line starting with whitespace (obsolete line folding, RFC 9112 5.2), is
// kBad. A '\n' in the bytes after `pos` always decides between kField, kEnd and kBad, so
// kMore means that no LF follows.
inline Line next_field(const char* p, size_t n, size_t& pos, std::string_view& name,
                       std::string_view& value) {
  if (pos >= n) return Line::kMore;
  if (p[pos] == '\n') {
    ++pos;
    return Line::kEnd;
  }
  if (p[pos] == '\r') {
    if (pos + 1 >= n) return Line::kMore;
    if (p[pos + 1] != '\n') return Line::kBad;
    pos += 2;
    return Line::kEnd;
  }
  size_t i = pos;
  while (i < n && is_tchar(p[i])) ++i;
  if (i >= n) return Line::kMore;
  if (p[i] != ':' || i == pos) return Line::kBad;
  const void* lf = std::memchr(p + i + 1, '\n', n - i - 1);
  if (lf == nullptr) return Line::kMore;
  const size_t e = static_cast<size_t>(static_cast<const char*>(lf) - p);
  std::string_view v(p + i + 1, e - i - 1);
  if (!v.empty() && v.back() == '\r') v.remove_suffix(1);
  name = {p + pos, i - pos};
  value = trim(v);
  pos = e + 1;
  return Line::kField;
}

// The fields of a header block from `pos` (just past its start line) to its empty line,
// each handed to take(name, value), which returns false to give up. Returns the block's
// length; 0 when a line is malformed, `take` gave up, or the block is not complete.
template <typename Take>
size_t parse_fields(const char* p, size_t n, size_t pos, Take&& take) {
  std::string_view name, value;
  for (;;) {
    switch (next_field(p, n, pos, name, value)) {
      case Line::kField:
        if (!take(name, value)) return 0;
        break;
      case Line::kEnd:
        return pos;
      case Line::kBad:
      case Line::kMore:
        return 0;
    }
  }
}

// The last header block a parser accepted and what it made of it, for blocks up to kMax
// bytes. A load generator sends one request over and over, and a server with fixed
// responses answers with one header block, so that a memcmp replaces the parse; the parse
// is a function of the block's bytes alone, and the block's end is its first empty line,
// so a remembered block at the start of new bytes is that block, whole.
template <typename T>
class LastBlock {
 public:
  static constexpr size_t kMax = 256;
  // The block's length when p[0, n) starts with the remembered block; 0 otherwise.
  size_t match(const char* p, size_t n) const {
    return len_ != 0 && n >= len_ && std::memcmp(p, block_.data(), len_) == 0 ? len_ : 0;
  }
  const T& value() const { return value_; }
  void remember(const char* p, size_t len, const T& v) {
    if (len > kMax) return;
    std::memcpy(block_.data(), p, len);
    len_ = len;
    value_ = v;
  }

 private:
  std::array<char, kMax> block_{};
  size_t len_ = 0;
  T value_{};
};

// A Content-Length value (RFC 9110 8.6: 1*DIGIT); false when it is not one or too large.
bool parse_length(std::string_view value, uint64_t& out);
// True when the comma-separated Connection field value holds `token` (RFC 9110 7.6.1).
bool has_token(std::string_view value, std::string_view token);

}  // namespace ws::http
