// The shipped example configs: every one loads, and the embedded quickstart is the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/unit/config/helpers.hpp"

namespace ws::config::test {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> example_files() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(WS_CONFIGS_DIR)) {
    if (e.is_regular_file() && (e.path().extension() == ".yaml" || e.path().extension() == ".yml"))
      out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(ConfigExamples, EveryFileInConfigsLoads) {
  auto files = example_files();
  // quickstart plus the examples/ directory; guards against the glob silently finding nothing.
  EXPECT_GE(files.size(), 5u);
  for (const auto& p : files) {
    LoadResult r = load_config_file(p.string());
    EXPECT_TRUE(r.config) << p << all_errors(r);
    EXPECT_TRUE(r.errors.empty()) << p;
    if (r.config) {
      EXPECT_FALSE(describe(*r.config).empty());
    }
  }
}

TEST(ConfigExamples, EmbeddedQuickstartEqualsTheFile) {
  std::string file = read_file(fs::path(WS_CONFIGS_DIR) / "quickstart.yaml");
  ASSERT_FALSE(file.empty());
  EXPECT_EQ(embedded_quickstart_config(), file);
}

TEST(ConfigExamples, QuickstartHasTheDocumentedShape) {
  LoadResult r = load_config_string(embedded_quickstart_config(), "<embedded quickstart>");
  ASSERT_TRUE(r.config) << all_errors(r);
  const Config& c = *r.config;
  ASSERT_EQ(c.ports.size(), 1u);
  EXPECT_EQ(c.ports[0].name, "p0");
  EXPECT_EQ(c.ports[0].device, "net_af_packet0,iface=wsq-dp,blocksz=20480,framesz=10240,qpairs=1");
  EXPECT_EQ(c.ports[0].mtu, 1500u);
  EXPECT_EQ(c.ports[0].address.to_string(), "10.77.0.1/24");
  EXPECT_EQ(c.dataplane.idle, IdleMode::adaptive);
  EXPECT_EQ(c.dataplane.lcores, std::vector<uint32_t>{0});
  EXPECT_FALSE(c.dataplane.hugepages);
  EXPECT_EQ(c.dataplane.memory_mb, 512u);
  EXPECT_EQ(c.dataplane.file_prefix, "wirespeed-quickstart");
  ASSERT_EQ(c.services.size(), 4u);
  const std::pair<std::string_view, std::string_view> expected[] = {{"echo-udp", "echo udp 7"},
                                                                    {"sink-udp", "sink udp 9"},
                                                                    {"echo-tcp", "echo tcp 7"},
                                                                    {"sink-tcp", "sink tcp 9"}};
  for (size_t i = 0; i < 4; ++i) {
    const ServiceConfig& s = c.services[i];
    EXPECT_EQ(s.name, expected[i].first);
    EXPECT_EQ(std::string(to_string(s.kind)) + " " + std::string(to_string(s.protocol)) + " " +
                  std::to_string(s.port),
              expected[i].second);
  }
  EXPECT_EQ(c.control.metrics_listen.to_string(), "127.0.0.1:9550");
}

TEST(ConfigExamples, DescribeSummarisesTheConfig) {
  LoadResult r = load_config_string(embedded_quickstart_config(), "q");
  ASSERT_TRUE(r.config);
  std::string d = describe(*r.config);
  for (std::string_view part :
       {"1 lcore", "idle adaptive", "no hugepages", "1 port", "p0", "10.77.0.1/24", "mtu 1500",
        "4 services", "echo-tcp (echo tcp/7)", "127.0.0.1:9550"}) {
    EXPECT_NE(d.find(part), std::string::npos) << "missing \"" << part << "\" in: " << d;
  }
  EXPECT_EQ(d.find('\n'), std::string::npos) << "one paragraph";
}

}  // namespace
}  // namespace ws::config::test
