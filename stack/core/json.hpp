// JSON (RFC 8259) through nlohmann::json (Debian's nlohmann-json3-dev), for what runs once
// per test or once a second: iperf3's control messages, the client and wsperf reports and
// `status --json`. Never on the packet path.
//
// nlohmann throws on misuse: a malformed document given to the throwing parse, a missing
// member read from a const object, a value read as the wrong type, invalid UTF-8 given to
// dump(). Bad input from a peer must be a clear error, never an exception, so the project
// reads and writes JSON only through these helpers, none of which throws.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace ws::json {

// Members keep the order they were written in, so reports read as they always did.
using Json = nlohmann::ordered_json;

struct Limits {
  size_t max_bytes = size_t{64} * 1024;
  int max_depth = 16;  // containers nested in containers
};

// The document, or nullopt for malformed input (RFC 8259, UTF-8), trailing characters, a
// number out of double's range, a document larger than max_bytes or nested deeper than
// max_depth. The parser is iterative and the input bounded, so a hostile document costs
// at most max_bytes of work whatever its shape.
std::optional<Json> parse(std::string_view text, const Limits& lim = {});

// Member `key` of an object; nullptr when `j` is not an object or has no such member.
const Json* member(const Json& j, std::string_view key);
// A number as a double; nullopt for anything else (missing, string, bool, null).
std::optional<double> number(const Json* v);
double number_or(const Json& obj, std::string_view key, double fallback);
// true for `true` and for a non-zero number (iperf3 sends flags both ways).
bool truthy(const Json* v);
// The string's text; `fallback` for anything else.
std::string_view string_or(const Json* v, std::string_view fallback = {});

// Compact text (no spaces); bytes that are not UTF-8 become U+FFFD, control characters
// are escaped, NaN and infinities are written as null.
std::string dump(const Json& j);
// Writes dump(j) and a newline to `path`; false when the file cannot be written.
bool write_file(const std::string& path, const Json& j);

}  // namespace ws::json
