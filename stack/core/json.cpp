#include "stack/core/json.hpp"

#include <cstdio>

namespace ws::json {

std::optional<Json> parse(std::string_view text, const Limits& lim) {
  if (text.size() > lim.max_bytes) return std::nullopt;
  // The callback sees each value with its depth (0: the root); a value deeper than the
  // limit marks the document, which is then refused as a whole.
  bool too_deep = false;
  Json::parser_callback_t depth_check = [&](int depth, Json::parse_event_t, Json&) {
    if (depth > lim.max_depth) too_deep = true;
    return true;
  };
  Json doc = Json::parse(text.begin(), text.end(), depth_check, /*allow_exceptions=*/false);
  if (doc.is_discarded() || too_deep) return std::nullopt;
  return doc;
}

const Json* member(const Json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::optional<double> number(const Json* v) {
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

double number_or(const Json& obj, std::string_view key, double fallback) {
  return number(member(obj, key)).value_or(fallback);
}

bool truthy(const Json* v) {
  if (v == nullptr) return false;
  if (const bool* b = v->get_ptr<const bool*>()) return *b;
  return number(v).value_or(0) != 0;
}

std::string_view string_or(const Json* v, std::string_view fallback) {
  if (v == nullptr) return fallback;
  const std::string* s = v->get_ptr<const std::string*>();
  return s != nullptr ? std::string_view(*s) : fallback;
}

std::string dump(const Json& j) {
  return j.dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

bool write_file(const std::string& path, const Json& j) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  const std::string text = dump(j) + "\n";
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return std::fclose(f) == 0 && written;
}

}  // namespace ws::json
