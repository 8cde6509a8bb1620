// Entry points: read the text, parse the YAML (yaml-cpp throws; nothing escapes from here),
// then hand the document to the section parsers and the cross-item validation.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>

#include "control/config/environment.hpp"
#include "control/config/schema.hpp"

namespace ws::config {

std::string ConfigError::format() const {
  return file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + message;
}

namespace {

using detail::Diagnostics;
using detail::Pos;

// Turns the text into the one document it must hold; reports why not otherwise.
std::optional<YAML::Node> parse_document(Diagnostics& d, std::string_view yaml) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(yaml));
  } catch (const YAML::Exception& e) {
    // yaml-cpp marks are 0-based; a mark may be missing (-1) for errors without a position.
    Pos p = e.mark.is_null() ? Pos{1, 1} : Pos{e.mark.line + 1, e.mark.column + 1};
    d.error(p, "YAML syntax error: " + e.msg);
    return std::nullopt;
  } catch (const std::exception& e) {
    d.error(Pos{1, 1}, std::string("YAML syntax error: ") + e.what());
    return std::nullopt;
  }
  // A trailing "---" yields an extra empty document; only real content counts.
  std::vector<YAML::Node> real;
  for (auto& doc : docs) {
    if (!doc.IsNull()) real.push_back(doc);
  }
  if (real.empty()) {
    d.error(Pos{1, 1}, "the config is empty; it needs at least 'version' and 'ports'");
    return std::nullopt;
  }
  if (real.size() > 1) {
    d.error(detail::pos_of(real[1]), "a config file holds one YAML document, this is a second");
    return std::nullopt;
  }
  return real[0];
}

}  // namespace

LoadResult load_config_string(std::string_view yaml, const std::string& name_for_errors) {
  LoadResult result;
  Diagnostics d(name_for_errors);
  try {
    auto root = parse_document(d, yaml);
    // Every unexpandable value is reported; the sections are not read with them in place,
    // which would only repeat each as an invalid value.
    if (root) detail::expand_environment(d, *root);
    if (root && d.empty()) {
      Config config;
      detail::Origins origins;
      detail::parse_root(d, *root, config, origins);
      detail::validate(d, config, origins);
      if (d.empty()) result.config = std::move(config);
    }
  } catch (const std::exception& e) {
    // Node accessors can throw on malformed trees (e.g. an alias cycle); report, don't crash.
    d.error(Pos{1, 1}, std::string("internal error while reading the config: ") + e.what());
    result.config.reset();
  } catch (...) {
    d.error(Pos{1, 1}, "internal error while reading the config");
    result.config.reset();
  }
  result.errors = d.take();
  if (!result.errors.empty()) result.config.reset();
  return result;
}

LoadResult load_config_file(const std::string& path) {
  auto cannot_read = [&](int err) {
    LoadResult r;
    r.errors.push_back(ConfigError{path, 0, 0, std::string("cannot read: ") + std::strerror(err)});
    return r;
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return cannot_read(errno);
  std::string text;
  char buf[16384];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) text.append(buf, n);
  // Reading a directory "opens" fine and then fails with EISDIR here.
  if (std::ferror(f.get())) return cannot_read(errno);
  return load_config_string(text, path);
}

}  // namespace ws::config
