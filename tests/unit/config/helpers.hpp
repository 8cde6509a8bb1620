// Shared helpers for the config tests: load YAML text and check errors precisely.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "control/config/config.hpp"

namespace ws::config::test {

// The smallest valid config; tests append lines to it (the next line is line 6).
inline constexpr std::string_view kBase =
    "version: 1\n"
    "ports:\n"
    "  - name: p0\n"
    "    device: net_null0\n"
    "    address: 10.0.0.1/24\n";

inline LoadResult load(std::string_view yaml) { return load_config_string(yaml, "test.yaml"); }

inline std::string all_errors(const LoadResult& r) {
  std::string out;
  for (const auto& e : r.errors) out += "\n  " + e.format();
  return out;
}

// Exactly one error, at line:col, whose message contains every fragment; no config.
inline ::testing::AssertionResult one_error(std::string_view yaml, int line, int col,
                                            std::initializer_list<std::string_view> fragments) {
  LoadResult r = load(yaml);
  if (r.config) return ::testing::AssertionFailure() << "config loaded without errors";
  if (r.errors.size() != 1) {
    return ::testing::AssertionFailure()
           << "expected 1 error, got " << r.errors.size() << ":" << all_errors(r);
  }
  const ConfigError& e = r.errors[0];
  if (e.file != "test.yaml" || e.line != line || e.col != col) {
    return ::testing::AssertionFailure()
           << "expected the error at " << line << ":" << col << ", got " << e.format();
  }
  for (auto f : fragments) {
    if (e.message.find(f) == std::string::npos) {
      return ::testing::AssertionFailure() << "message lacks \"" << f << "\": " << e.format();
    }
  }
  return ::testing::AssertionSuccess();
}

inline std::string with(std::string_view extra) { return std::string(kBase) + std::string(extra); }

// A port with both families: one IPv4 address and two IPv6 prefixes (the next line is line 6).
inline constexpr std::string_view kDual =
    "version: 1\n"
    "ports:\n"
    "  - name: p0\n"
    "    device: net_null0\n"
    "    addresses: [10.0.0.1/24, 2001:db8::1/64, 'fd00:1::7/48']\n";

inline std::string dual(std::string_view extra) { return std::string(kDual) + std::string(extra); }

}  // namespace ws::config::test
