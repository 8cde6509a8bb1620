// A small JSON reader and writer (RFC 8259) for the iperf3 control channel: the
// client's parameter and result objects in, the server's results out.
//
// The reader is bounded: input size, node count and nesting depth are limits, so a
// hostile client costs at most those. It parses into a flat node array plus one string
// arena, both reserved once per document (no allocation per value). Numbers are kept as
// doubles, as the reference client (cJSON) does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ws::iperf3 {

struct JsonLimits {
  size_t max_bytes = size_t{64} * 1024;
  size_t max_nodes = 4096;
  size_t max_depth = 16;
};

class JsonDoc;

// A read-only handle on one value of a parsed document; an invalid handle stands for
// "missing" and answers every question with the fallback.
class JsonValue {
 public:
  enum class Type : uint8_t { kNone, kNull, kBool, kNumber, kString, kArray, kObject };

  JsonValue() = default;
  Type type() const;
  bool valid() const { return doc_ != nullptr; }
  bool is_object() const { return type() == Type::kObject; }
  bool is_array() const { return type() == Type::kArray; }
  bool is_number() const { return type() == Type::kNumber; }

  // Member of an object (the first with that key); invalid when absent.
  JsonValue operator[](std::string_view key) const;
  // First element or member, and the next sibling; invalid at the end.
  JsonValue first() const;
  JsonValue next() const;
  size_t size() const;  // elements or members

  double number(double fallback = 0) const;
  // true for `true` and for a non-zero number (iperf3 sends flags both ways).
  bool truthy() const;
  std::string_view string(std::string_view fallback = {}) const;
  std::string_view key() const;  // member name, for members of an object

 private:
  friend class JsonDoc;
  JsonValue(const JsonDoc* d, uint32_t i) : doc_(d), idx_(i) {}
  const JsonDoc* doc_ = nullptr;
  uint32_t idx_ = 0;
};

class JsonDoc {
 public:
  // Parses a complete document; false (see error()) on malformed input, trailing
  // garbage or an exceeded limit.
  bool parse(std::string_view text, const JsonLimits& lim = {});
  JsonValue root() const;
  const char* error() const { return error_; }

 private:
  friend class JsonValue;
  struct Node {
    JsonValue::Type type = JsonValue::Type::kNull;
    bool boolean = false;
    double num = 0;
    uint32_t str_off = 0, str_len = 0;  // string value in arena_
    uint32_t key_off = 0, key_len = 0;  // member name in arena_
    uint32_t first = 0, next = 0;       // child and sibling; 0 = none (node 0 is the root)
    uint32_t count = 0;
  };
  class Parser;
  std::vector<Node> nodes_;
  std::string arena_;
  const char* error_ = "empty";
};

// Appends compact JSON to a string. Commas are placed by the writer; keys and values
// are escaped. Non-finite numbers are written as 0 (JSON has no NaN).
class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(int64_t v);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(double v);
  JsonWriter& value(bool v);
  JsonWriter& value(std::string_view v);
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }

 private:
  void separate();
  void quoted(std::string_view s);
  std::string& out_;
  // Per open container: whether the next item needs a comma. Depth beyond the array
  // is a programming error; the writer then stops separating correctly but stays safe.
  bool need_comma_[32] = {};
  size_t depth_ = 0;
  bool after_key_ = false;
};

}  // namespace ws::iperf3
