// Internal: checked access to YAML nodes. Every reader reports problems to a Diagnostics
// with the node's position and returns std::nullopt, so section parsers can go on and collect
// every error in one pass instead of stopping at the first.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "control/config/config.hpp"

namespace ws::config::detail {

// A 1-based source position; {0, 0} when unknown.
struct Pos {
  int line = 0;
  int col = 0;
};

Pos pos_of(const YAML::Node& node);

class Diagnostics {
 public:
  explicit Diagnostics(std::string file) : file_(std::move(file)) {}
  void error(Pos at, std::string message);
  bool empty() const { return errors_.empty(); }
  const std::string& file() const { return file_; }
  // The collected errors, ordered by position (stable for equal positions).
  std::vector<ConfigError> take();

 private:
  std::string file_;
  std::vector<ConfigError> errors_;
};

// A value to read: the node, where to report it, and its dotted path for messages.
// A null value (`key:` with nothing after it) carries no useful mark of its own, so its
// position is that of its key.
struct Value {
  YAML::Node node;
  Pos pos;
  std::string path;
};

// "a mapping", "a list", "nothing", "'text'": what the user wrote, for messages.
std::string describe_node(const YAML::Node& node);

std::optional<uint64_t> read_uint(Diagnostics& d, const Value& v, uint64_t lo, uint64_t hi);
std::optional<bool> read_bool(Diagnostics& d, const Value& v);
// A scalar; quoted or plain. Empty strings are rejected unless allow_empty.
std::optional<std::string> read_string(Diagnostics& d, const Value& v, bool allow_empty = false);
std::optional<std::vector<Value>> read_list(Diagnostics& d, const Value& v);
std::optional<ws::Ipv4Cidr> read_cidr(Diagnostics& d, const Value& v);
std::optional<ws::Ipv4Addr> read_ipv4(Diagnostics& d, const Value& v);
std::optional<ws::MacAddr> read_mac(Diagnostics& d, const Value& v);
// "ip:port" with a non-zero port.
std::optional<ws::Endpoint> read_endpoint(Diagnostics& d, const Value& v);

template <typename E>
using EnumNames = std::initializer_list<std::pair<std::string_view, E>>;

template <typename E>
std::optional<E> read_enum(Diagnostics& d, const Value& v, EnumNames<E> names) {
  auto s = read_string(d, v);
  if (!s) return std::nullopt;
  for (const auto& [name, value] : names) {
    if (*s == name) return value;
  }
  std::string choices;
  for (const auto& [name, value] : names) {
    if (!choices.empty()) choices += ", ";
    choices += name;
  }
  d.error(v.pos, v.path + ": '" + *s + "' is not one of: " + choices);
  return std::nullopt;
}

// A checked view of one YAML mapping. Construction reports a non-mapping node, keys that are
// not plain scalars, unknown keys (with a suggestion when one is close) and duplicate keys
// (yaml-cpp silently keeps one of them, which would hide a mistake).
class MapView {
 public:
  // path: "" for the top level, else e.g. "ports[0]" or "tcp.keepalive".
  MapView(Diagnostics& d, const Value& v, std::initializer_list<std::string_view> known);

  bool is_map() const { return is_map_; }
  Pos pos() const { return pos_; }
  const std::string& path() const { return path_; }
  Diagnostics& diag() const { return d_; }

  std::optional<Value> get(std::string_view key) const;
  bool has(std::string_view key) const { return get(key).has_value(); }
  // Position of the key itself (for errors about the key, e.g. "not allowed here").
  Pos key_pos(std::string_view key) const;
  // Reports "missing required key" at the mapping when absent; returns presence.
  bool require(std::string_view key) const;
  std::string key_path(std::string_view key) const;

  // Convenience: read an optional key into `out` (left at its default when absent/invalid).
  // Return true when the key was present and valid.
  template <typename T>
  bool uint(std::string_view key, uint64_t lo, uint64_t hi, T& out) const {
    auto v = get(key);
    if (!v) return false;
    auto n = read_uint(d_, *v, lo, hi);
    if (n) out = static_cast<T>(*n);
    return n.has_value();
  }
  bool boolean(std::string_view key, bool& out) const;
  // The required `name` key: 1..max_len of A-Z a-z 0-9 - _ . (valid_name). Its position when
  // valid (for duplicate checks), else nullopt with the error reported.
  std::optional<Pos> name(std::string& out, size_t max_len) const;
  bool string(std::string_view key, std::string& out, bool allow_empty = false) const;
  template <typename E>
  bool enumeration(std::string_view key, E& out, EnumNames<E> names) const {
    auto v = get(key);
    if (!v) return false;
    auto e = read_enum<E>(d_, *v, names);
    if (e) out = *e;
    return e.has_value();
  }

 private:
  struct Entry {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
  };
  Diagnostics& d_;
  std::string path_;
  Pos pos_;
  bool is_map_ = false;
  std::vector<Entry> entries_;
};

// Names appear as Prometheus label values and in DPDK object names: 1..max_len characters of
// A-Z a-z 0-9 - _ .
bool valid_name(std::string_view s, size_t max_len);

// "ports[0]" + "mtu" -> "ports[0].mtu"; "" + "version" -> "version".
std::string join_path(std::string_view parent, std::string_view key);

}  // namespace ws::config::detail
