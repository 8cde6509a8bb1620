// `${NAME}` expansion from the environment and `lcores: auto`.
#include "control/config/environment.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>

#include <string>

#include "tests/unit/config/helpers.hpp"

namespace ws::config::test {
namespace {

std::string expand(std::string_view text) {
  std::string error;
  auto v = detail::expand_environment(text, error);
  return v ? *v : "ERROR: " + error;
}

TEST(ConfigEnvironment, ExpandsSetVariablesDefaultsAndDollars) {
  setenv("WS_TEST_VF", "0000:3b:02.1", 1);
  setenv("WS_TEST_EMPTY", "", 1);
  unsetenv("WS_TEST_UNSET");
  EXPECT_EQ(expand("${WS_TEST_VF}"), "0000:3b:02.1");
  EXPECT_EQ(expand("pci-${WS_TEST_VF}-x"), "pci-0000:3b:02.1-x");
  EXPECT_EQ(expand("${WS_TEST_UNSET:-7}"), "7");
  EXPECT_EQ(expand("${WS_TEST_EMPTY:-fallback}"), "fallback");
  EXPECT_EQ(expand("${WS_TEST_EMPTY}"), "");
  EXPECT_EQ(expand("$$5 and $x and $"), "$5 and $x and $");
  EXPECT_EQ(expand("${WS_TEST_VF}${WS_TEST_VF}"), "0000:3b:02.10000:3b:02.1");
}

TEST(ConfigEnvironment, RefusesWhatItCannotExpand) {
  unsetenv("WS_TEST_UNSET");
  EXPECT_NE(expand("${WS_TEST_UNSET}").find("environment variable WS_TEST_UNSET is not set"),
            std::string::npos);
  EXPECT_NE(expand("${WS_TEST").find("without a closing"), std::string::npos);
  EXPECT_NE(expand("${1BAD}").find("not a variable name"), std::string::npos);
  EXPECT_NE(expand("${}").find("not a variable name"), std::string::npos);
}

TEST(ConfigEnvironment, ValuesAreExpandedBeforeTheyAreRead) {
  setenv("WS_TEST_PCI", "0000:03:00.0", 1);
  setenv("WS_TEST_MTU", "9000", 1);
  LoadResult r = load(
      "version: 1\n"
      "ports:\n"
      "  - name: p0\n"
      "    pci: \"${WS_TEST_PCI}\"\n"
      "    mtu: ${WS_TEST_MTU}\n"
      "    address: 10.0.0.1/24\n");
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_EQ(r.config->ports[0].pci, "0000:03:00.0");
  EXPECT_EQ(r.config->ports[0].mtu, 9000u);
}

TEST(ConfigEnvironment, AnUnsetVariableIsAnErrorAtItsValue) {
  unsetenv("WS_TEST_UNSET");
  EXPECT_TRUE(one_error(with("dataplane:\n  file_prefix: \"${WS_TEST_UNSET}\"\n"), 7, 16,
                        {"environment variable WS_TEST_UNSET is not set"}));
}

TEST(ConfigEnvironment, AnExpandedValueIsStillValidatedAtItsPosition) {
  setenv("WS_TEST_MTU", "70000", 1);
  EXPECT_TRUE(one_error(with("    mtu: ${WS_TEST_MTU}\n"), 6, 10, {"70000", "68..9600"}));
}

TEST(ConfigLcoresAuto, TakesTheAffinityLessOneAndQueuesFollow) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  std::vector<uint32_t> cpus;
  for (uint32_t c = 0; c < 128; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  if (cpus.size() > 2) cpus.erase(cpus.begin());
  LoadResult r =
      load(with("  - name: p1\n"
                "    device: net_null1\n"
                "    address: 10.0.1.1/24\n"
                "    rx_queues: 1\n"
                "dataplane:\n  lcores: auto\n"));
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_TRUE(r.config->dataplane.lcores_auto);
  EXPECT_EQ(r.config->dataplane.lcores, cpus);
  EXPECT_EQ(r.config->ports[0].rx_queues, cpus.size());
  EXPECT_EQ(r.config->ports[0].tx_queues, cpus.size());
  EXPECT_EQ(r.config->ports[1].rx_queues, 1u);  // given: kept
  EXPECT_EQ(r.config->ports[1].tx_queues, cpus.size());
}

TEST(ConfigLcoresAuto, OtherWordsAreRefused) {
  EXPECT_TRUE(one_error(with("dataplane:\n  lcores: all\n"), 7, 11, {"lcores"}));
}

}  // namespace
}  // namespace ws::config::test
