#include "control/config/reader.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace ws::config::detail {

namespace {

// Quoted scalars carry the non-specific tag "!"; plain ones carry "?". A quoted "512" is a
// string the user chose to write as a string, so it is not taken as a number or a boolean.
bool is_quoted(const YAML::Node& n) { return n.Tag() == "!"; }

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// YAML 1.2 core-schema floats: 1.5, 1e3, .5, .inf, .nan.
bool looks_like_float(std::string_view s) {
  if (s == ".inf" || s == ".Inf" || s == ".INF" || s == "-.inf" || s == "+.inf" || s == ".nan" ||
      s == ".NaN" || s == ".NAN")
    return true;
  if (s.find_first_of(".eE") == std::string_view::npos) return false;
  std::string copy(s);
  char* end = nullptr;
  std::strtod(copy.c_str(), &end);
  return end != nullptr && *end == '\0' && end != copy.c_str();
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string section_name(const std::string& path) {
  return path.empty() ? std::string("at the top level") : "in '" + path + "'";
}

}  // namespace

Pos pos_of(const YAML::Node& node) {
  if (!node.IsDefined()) return {};
  YAML::Mark m = node.Mark();
  if (m.is_null() || m.line < 0 || m.column < 0) return {};
  return {m.line + 1, m.column + 1};
}

void Diagnostics::error(Pos at, std::string message) {
  errors_.push_back(ConfigError{file_, at.line, at.col, std::move(message)});
}

std::vector<ConfigError> Diagnostics::take() {
  std::stable_sort(errors_.begin(), errors_.end(), [](const ConfigError& a, const ConfigError& b) {
    return a.line != b.line ? a.line < b.line : a.col < b.col;
  });
  return std::move(errors_);
}

std::string join_path(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return std::string(parent) + "." + std::string(key);
}

bool valid_name(std::string_view s, size_t max_len) {
  if (s.empty() || s.size() > max_len) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

std::string describe_node(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      break;
  }
  return is_quoted(node) ? "the string \"" + node.Scalar() + "\"" : "'" + node.Scalar() + "'";
}

std::optional<uint64_t> read_uint(Diagnostics& d, const Value& v, uint64_t lo, uint64_t hi) {
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  auto fail = [&](const std::string& why) {
    d.error(v.pos, v.path + ": " + why);
    return std::nullopt;
  };
  if (!v.node.IsScalar() || is_quoted(v.node)) {
    return fail("expected an integer (" + range + "), got " + describe_node(v.node));
  }
  std::string_view s = v.node.Scalar();
  std::string_view digits = (!s.empty() && s[0] == '+') ? s.substr(1) : s;
  if (!s.empty() && s[0] == '-' && all_digits(s.substr(1))) {
    return fail("expected a non-negative integer (" + range + "), got " + std::string(s));
  }
  if (looks_like_float(s)) {
    return fail("expected an integer (" + range + "), got the number " + std::string(s));
  }
  if (!all_digits(digits)) {
    return fail("expected an integer (" + range + "), got " + describe_node(v.node));
  }
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size() || n < lo || n > hi) {
    return fail(std::string(s) + " is out of range " + range);
  }
  return n;
}

std::optional<bool> read_bool(Diagnostics& d, const Value& v) {
  if (v.node.IsScalar() && !is_quoted(v.node)) {
    const std::string& s = v.node.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  d.error(v.pos, v.path + ": expected true or false, got " + describe_node(v.node));
  return std::nullopt;
}

std::optional<std::string> read_string(Diagnostics& d, const Value& v, bool allow_empty) {
  if (!v.node.IsScalar()) {
    d.error(v.pos, v.path + ": expected a string, got " + describe_node(v.node));
    return std::nullopt;
  }
  if (!allow_empty && v.node.Scalar().empty()) {
    d.error(v.pos, v.path + ": must not be empty");
    return std::nullopt;
  }
  return v.node.Scalar();
}

std::optional<std::vector<Value>> read_list(Diagnostics& d, const Value& v) {
  if (!v.node.IsSequence()) {
    d.error(v.pos, v.path + ": expected a list, got " + describe_node(v.node));
    return std::nullopt;
  }
  std::vector<Value> out;
  size_t i = 0;
  for (const auto& item : v.node) {
    Pos p = pos_of(item);
    if (item.IsNull() || p.line == 0) p = v.pos;
    out.push_back(Value{item, p, v.path + "[" + std::to_string(i) + "]"});
    ++i;
  }
  return out;
}

std::optional<ws::Ipv4Cidr> read_cidr(Diagnostics& d, const Value& v) {
  auto s = read_string(d, v);
  if (!s) return std::nullopt;
  auto c = ws::Ipv4Cidr::parse(*s);
  if (!c) d.error(v.pos, v.path + ": '" + *s + "' is not an IPv4 address/prefix like 10.77.0.1/24");
  return c;
}

std::optional<ws::Ipv4Addr> read_ipv4(Diagnostics& d, const Value& v) {
  auto s = read_string(d, v);
  if (!s) return std::nullopt;
  auto a = ws::Ipv4Addr::parse(*s);
  if (!a) d.error(v.pos, v.path + ": '" + *s + "' is not an IPv4 address like 10.77.0.254");
  return a;
}

std::optional<ws::MacAddr> read_mac(Diagnostics& d, const Value& v) {
  auto s = read_string(d, v);
  if (!s) return std::nullopt;
  auto m = ws::MacAddr::parse(*s);
  if (!m) {
    d.error(v.pos, v.path + ": '" + *s + "' is not a MAC address like \"02:00:00:00:00:01\"");
  }
  return m;
}

std::optional<ws::Endpoint> read_endpoint(Diagnostics& d, const Value& v) {
  auto s = read_string(d, v);
  if (!s) return std::nullopt;
  auto e = ws::Endpoint::parse(*s);
  if (!e || e->port == 0) {
    d.error(v.pos, v.path + ": '" + *s +
                       "' is not an address and port like 10.77.0.2:9 or [2001:db8::2]:7");
    return std::nullopt;
  }
  return e;
}

MapView::MapView(Diagnostics& d, const Value& v, std::initializer_list<std::string_view> known)
    : d_(d), path_(v.path), pos_(v.pos) {
  if (!v.node.IsMap()) {
    d.error(v.pos, (path_.empty() ? std::string("config") : path_) + ": expected a mapping, got " +
                       describe_node(v.node));
    return;
  }
  is_map_ = true;
  for (auto it = v.node.begin(); it != v.node.end(); ++it) {
    // Copies, not references: the iterator's pair is a temporary proxy.
    const YAML::Node k = it->first;
    const YAML::Node value = it->second;
    if (!k.IsScalar()) {
      d.error(pos_of(k),
              "keys must be plain names " + section_name(path_) + ", got " + describe_node(k));
      continue;
    }
    const std::string& name = k.Scalar();
    auto dup = std::find_if(entries_.begin(), entries_.end(),
                            [&](const Entry& e) { return e.key == name; });
    if (dup != entries_.end()) {
      d.error(pos_of(k), "duplicate key '" + name + "' " + section_name(path_) +
                             " (first given at line " + std::to_string(pos_of(dup->key_node).line) +
                             ")");
      continue;
    }
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string msg = "unknown key '" + name + "' " + section_name(path_);
      std::string_view best;
      size_t best_dist = 3;  // suggest only close matches: typos, not different words
      for (auto cand : known) {
        size_t dist = edit_distance(name, cand);
        if (dist < best_dist) {
          best_dist = dist;
          best = cand;
        }
      }
      if (!best.empty()) {
        msg.append("; did you mean '").append(best).append("'?");
      } else {
        msg += "; known keys:";
        for (auto cand : known) msg.append(" ").append(cand);
      }
      d.error(pos_of(k), std::move(msg));
      continue;
    }
    entries_.push_back(Entry{name, k, value});
  }
}

std::optional<Value> MapView::get(std::string_view key) const {
  for (const auto& e : entries_) {
    if (e.key != key) continue;
    Pos p = pos_of(e.value);
    if (e.value.IsNull() || p.line == 0) p = pos_of(e.key_node);
    return Value{e.value, p, key_path(key)};
  }
  return std::nullopt;
}

Pos MapView::key_pos(std::string_view key) const {
  for (const auto& e : entries_) {
    if (e.key == key) return pos_of(e.key_node);
  }
  return pos_;
}

bool MapView::require(std::string_view key) const {
  if (!is_map_ || has(key)) return is_map_;
  d_.error(pos_, (path_.empty() ? std::string("config") : path_) + ": missing required key '" +
                     std::string(key) + "'");
  return false;
}

std::string MapView::key_path(std::string_view key) const { return join_path(path_, key); }

std::optional<Pos> MapView::name(std::string& out, size_t max_len) const {
  if (!require("name")) return std::nullopt;
  auto v = *get("name");
  auto n = read_string(d_, v);
  if (!n) return std::nullopt;
  if (!valid_name(*n, max_len)) {
    d_.error(v.pos, v.path + ": '" + *n + "' is not a valid name (1.." + std::to_string(max_len) +
                        " of A-Z a-z 0-9 - _ .)");
    return std::nullopt;
  }
  out = *n;
  return v.pos;
}

bool MapView::boolean(std::string_view key, bool& out) const {
  auto v = get(key);
  if (!v) return false;
  auto b = read_bool(d_, *v);
  if (b) out = *b;
  return b.has_value();
}

bool MapView::string(std::string_view key, std::string& out, bool allow_empty) const {
  auto v = get(key);
  if (!v) return false;
  auto s = read_string(d_, *v, allow_empty);
  if (s) out = std::move(*s);
  return s.has_value();
}

}  // namespace ws::config::detail
