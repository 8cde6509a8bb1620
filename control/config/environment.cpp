#include "control/config/environment.hpp"

#include <cstdlib>

namespace ws::config::detail {

namespace {

bool name_char(char c, bool first) {
  return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (!first && c >= '0' && c <= '9');
}

// One `${...}` starting at text[at] == '$', text[at + 1] == '{'. Appends the value to
// `out` and returns the index after the closing brace, or nullopt with `error`.
std::optional<size_t> substitute(std::string_view text, size_t at, std::string& out,
                                 std::string& error) {
  size_t close = text.find('}', at + 2);
  if (close == std::string_view::npos) {
    error = "'${' without a closing '}' (write $$ for a literal '$')";
    return std::nullopt;
  }
  std::string_view inner = text.substr(at + 2, close - at - 2);
  std::string_view name = inner;
  std::optional<std::string_view> fallback;
  if (size_t dash = inner.find(":-"); dash != std::string_view::npos) {
    name = inner.substr(0, dash);
    fallback = inner.substr(dash + 2);
  }
  bool valid = !name.empty();
  for (size_t i = 0; i < name.size(); ++i) valid = valid && name_char(name[i], i == 0);
  if (!valid) {
    error = "'${" + std::string(inner) + "}' is not a variable name (letters, digits, _)";
    return std::nullopt;
  }
  const char* value = std::getenv(std::string(name).c_str());
  if (value != nullptr && (*value != '\0' || !fallback)) {
    out += value;
  } else if (fallback) {
    out += *fallback;
  } else {
    error = "environment variable " + std::string(name) +
            " is not set (give it a value, or a default with ${" + std::string(name) +
            ":-default})";
    return std::nullopt;
  }
  return close + 1;
}

}  // namespace

std::optional<std::string> expand_environment(std::string_view text, std::string& error) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const char after = text[i] == '$' && i + 1 < text.size() ? text[i + 1] : '\0';
    if (after == '$') {
      out += '$';
      i += 2;
    } else if (after == '{') {
      auto next = substitute(text, i, out, error);
      if (!next) return std::nullopt;
      i = *next;
    } else {
      out += text[i++];
    }
  }
  return out;
}

namespace {

// Aliases can make a cycle or an exponential tree of a short document: the walk is bounded in
// depth and in values visited.
constexpr int kMaxDepth = 64;
constexpr size_t kMaxValues = 100000;

bool walk(Diagnostics& d, YAML::Node node, int depth, size_t& budget) {
  if (depth > kMaxDepth || budget == 0) {
    d.error(pos_of(node), "the config nests too deeply or repeats too much (an alias cycle?)");
    return false;
  }
  --budget;
  if (node.IsScalar()) {
    const std::string& text = node.Scalar();
    if (text.find('$') == std::string::npos) return true;
    std::string error;
    if (auto v = expand_environment(text, error)) {
      node = *v;
    } else {
      d.error(pos_of(node), error);
    }
    return true;
  }
  if (node.IsSequence()) {
    for (auto item : node) {
      if (!walk(d, item, depth + 1, budget)) return false;
    }
  } else if (node.IsMap()) {
    for (auto kv : node) {
      if (!walk(d, kv.second, depth + 1, budget)) return false;
    }
  }
  return true;
}

}  // namespace

// A YAML::Node is a handle: this copy shares the document the walk rewrites in place.
// NOLINTNEXTLINE(performance-unnecessary-value-param)
void expand_environment(Diagnostics& d, YAML::Node node) {
  size_t budget = kMaxValues;
  walk(d, node, 0, budget);
}

}  // namespace ws::config::detail
