// File-level behaviour: reading, YAML syntax, document shape, error formatting.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/unit/config/helpers.hpp"

namespace ws::config::test {
namespace {

TEST(ConfigLoad, ErrorFormatIsFileLineColMessage) {
  ConfigError e{"a.yaml", 3, 7, "ports[0].mtu: 9601 is out of range 68..9600"};
  EXPECT_EQ(e.format(), "a.yaml:3:7: ports[0].mtu: 9601 is out of range 68..9600");
}

TEST(ConfigLoad, MissingFileIsOneErrorAtZeroZero) {
  LoadResult r = load_config_file("/nonexistent/wirespeed.yaml");
  EXPECT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].format(),
            "/nonexistent/wirespeed.yaml:0:0: cannot read: No such file or directory");
}

TEST(ConfigLoad, DirectoryIsUnreadable) {
  LoadResult r = load_config_file("/");
  EXPECT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].format(), "/:0:0: cannot read: Is a directory");
}

TEST(ConfigLoad, FileNameAppearsInErrors) {
  auto path = std::filesystem::temp_directory_path() / "ws_config_test_bad.yaml";
  {
    std::ofstream f(path);
    f << "version: 1\nports: []\n";
  }
  LoadResult r = load_config_file(path.string());
  std::filesystem::remove(path);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].format(), path.string() + ":2:8: ports: at least one port is required");
}

TEST(ConfigLoad, ValidFileLoads) {
  auto path = std::filesystem::temp_directory_path() / "ws_config_test_good.yaml";
  {
    std::ofstream f(path);
    f << kBase;
  }
  LoadResult r = load_config_file(path.string());
  std::filesystem::remove(path);
  EXPECT_TRUE(r.errors.empty()) << all_errors(r);
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->ports.at(0).name, "p0");
}

TEST(ConfigLoad, YamlSyntaxErrorHasItsPosition) {
  // An unterminated flow sequence: yaml-cpp reports where it gave up.
  EXPECT_TRUE(one_error("version: 1\nports: [1, 2\nservices: 3\n", 3, 9, {"YAML syntax error"}));
}

TEST(ConfigLoad, BadIndentationIsASyntaxError) {
  EXPECT_TRUE(one_error("version: 1\n  ports: 2\n", 2, 8, {"YAML syntax error"}));
}

TEST(ConfigLoad, UndefinedAliasIsASyntaxError) {
  EXPECT_TRUE(one_error("version: *nope\n", 1, 10, {"YAML syntax error", "anchor"}));
}

TEST(ConfigLoad, EmptyTextIsAnError) {
  EXPECT_TRUE(one_error("", 1, 1, {"empty"}));
  EXPECT_TRUE(one_error("# nothing but a comment\n", 1, 1, {"empty"}));
}

TEST(ConfigLoad, RootMustBeAMapping) {
  EXPECT_TRUE(one_error("- 1\n- 2\n", 1, 1, {"expected a mapping", "a list"}));
}

TEST(ConfigLoad, SecondDocumentIsAnError) {
  EXPECT_TRUE(one_error(with("---\nversion: 1\n"), 7, 1, {"one YAML document"}));
}

TEST(ConfigLoad, TrailingDocumentMarkerIsHarmless) {
  LoadResult r = load(with("---\n"));
  EXPECT_TRUE(r.config) << all_errors(r);
}

TEST(ConfigLoad, AllErrorsAreCollectedInPositionOrder) {
  LoadResult r = load(
      "version: 2\n"                // 1: bad version
      "dataplane:\n"                // 2
      "  lcores: [0, 0]\n"          // 3: duplicate lcore
      "  memory_mb: lots\n"         // 4: wrong type
      "ports:\n"                    // 5
      "  - name: p0\n"              // 6
      "    device: net_null0\n"     // 7
      "    address: 10.0.0.1/33\n"  // 8: bad CIDR
      "    mtu: 10000\n"            // 9: out of range
      "services:\n"                 // 10
      "  - name: s\n"               // 11
      "    kind: echo\n"            // 12
      "    protocol: tcp\n"         // 13: missing port (reported at the item)
      "tcp: { nagel: true }\n");    // 14: unknown key
  EXPECT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 7u) << all_errors(r);
  const std::pair<int, int> where[] = {{1, 10}, {3, 15}, {4, 14}, {8, 14},
                                       {9, 10}, {11, 5}, {14, 8}};
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(r.errors[i].line, where[i].first) << r.errors[i].format();
    EXPECT_EQ(r.errors[i].col, where[i].second) << r.errors[i].format();
  }
  EXPECT_NE(r.errors[6].message.find("nagel"), std::string::npos);
  EXPECT_NE(r.errors[6].message.find("did you mean 'nagle'"), std::string::npos);
}

TEST(ConfigLoad, GarbageNeverThrows) {
  const char* inputs[] = {"\x01\x02\x03",
                          "{{{{",
                          "[",
                          ": :",
                          "version: [",
                          "? [a, b]\n: c",
                          "&a [*a]",
                          "!!binary zz",
                          "version: 1\nports: {}\n",
                          "version: 1\nports: [[]]\n"};
  for (const char* in : inputs) {
    LoadResult r;
    EXPECT_NO_THROW(r = load(in)) << in;
    EXPECT_FALSE(r.config) << in;
    EXPECT_FALSE(r.errors.empty()) << in;
  }
}

}  // namespace
}  // namespace ws::config::test
