// Bounded labels and Prometheus naming rules are enforced at registration.
#include <gtest/gtest.h>

#include "control/stats/writer.hpp"
#include "test_util.hpp"

namespace ws::stats {
namespace {

class Validation : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(w.create(dir.file("v.stats"))) << w.last_error(); }
  bool ok(MetricSpec s) { return w.register_metric(s).has_value(); }
  test::TempDir dir;
  Writer w;
};

TEST_F(Validation, AcceptsContractNames) {
  EXPECT_TRUE(ok({.name = "wirespeed_port_receive_packets_total",
                  .help = "h",
                  .labels = {{"port", "p0"}},
                  .scope = Scope::kGlobal}));
  EXPECT_TRUE(ok({.name = "wirespeed_tcp_connections",
                  .help = "h",
                  .type = MetricType::kGauge,
                  .labels = {{"state", "established"}}}));
  EXPECT_TRUE(ok({.name = "wirespeed_ping_rtt_seconds",
                  .help = "h",
                  .type = MetricType::kHistogram,
                  .labels = {{"service", "rtt"}}}));
}

TEST_F(Validation, RejectsUnboundedLabelKeys) {
  EXPECT_FALSE(ok({.name = "wirespeed_x_total", .help = "h", .labels = {{"address", "10.0.0.1"}}}));
  EXPECT_NE(w.last_error().find("address"), std::string::npos);
  EXPECT_FALSE(ok({.name = "wirespeed_x_total", .help = "h", .labels = {{"connection", "7"}}}));
}

TEST_F(Validation, RejectsBadLabelValues) {
  EXPECT_FALSE(ok({.name = "wirespeed_x_total", .help = "h", .labels = {{"port", ""}}}));
  EXPECT_FALSE(ok({.name = "wirespeed_x_total", .help = "h", .labels = {{"port", "a b"}}}));
  EXPECT_FALSE(ok({.name = "wirespeed_x_total", .help = "h", .labels = {{"port", "p\"0"}}}));
  EXPECT_FALSE(ok({.name = "wirespeed_x_total",
                   .help = "h",
                   .labels = {{"port", std::string(kLabelValueMax, 'a')}}}));
  EXPECT_FALSE(
      ok({.name = "wirespeed_x_total", .help = "h", .labels = {{"port", "p0"}, {"port", "p1"}}}));
}

TEST_F(Validation, CoreLabelIsAddedNotPassedForLabeledScope) {
  EXPECT_FALSE(ok({.name = "wirespeed_x_total",
                   .help = "h",
                   .labels = {{"core", "1"}},
                   .scope = Scope::kPerCoreLabeled}));
  EXPECT_TRUE(ok({.name = "wirespeed_x_total", .help = "h", .scope = Scope::kPerCoreLabeled}));
}

TEST_F(Validation, NamingConventions) {
  EXPECT_FALSE(ok({.name = "wirespeed_packets", .help = "h"}));  // counter without _total
  EXPECT_FALSE(ok({.name = "wirespeed_conns_total", .help = "h", .type = MetricType::kGauge}));
  EXPECT_FALSE(ok({.name = "other_packets_total", .help = "h"}));  // namespace
  EXPECT_FALSE(ok({.name = "wirespeed_bad-name_total", .help = "h"}));
  EXPECT_FALSE(ok({.name = "wirespeed_up", .help = "h", .type = MetricType::kGauge}));  // reserved
  EXPECT_FALSE(ok({.name = "wirespeed_x_total", .help = ""}));
  EXPECT_FALSE(ok({.name = "wirespeed_x_total", .help = "two\nlines"}));
  EXPECT_FALSE(ok({.name = "wirespeed_rtt_count", .help = "h", .type = MetricType::kHistogram}));
}

TEST_F(Validation, FamiliesMustAgree) {
  ASSERT_TRUE(ok({.name = "wirespeed_drops_total", .help = "h", .labels = {{"reason", "a"}}}));
  EXPECT_FALSE(ok({.name = "wirespeed_drops_total", .help = "h", .labels = {{"reason", "a"}}}))
      << "same series twice";
  EXPECT_FALSE(ok({.name = "wirespeed_drops_total", .help = "other", .labels = {{"reason", "b"}}}));
  EXPECT_FALSE(ok({.name = "wirespeed_drops_total", .help = "h", .labels = {{"port", "b"}}}));
  EXPECT_FALSE(ok({.name = "wirespeed_drops_total",
                   .help = "h",
                   .labels = {{"reason", "b"}},
                   .scope = Scope::kGlobal}));
  EXPECT_TRUE(ok({.name = "wirespeed_drops_total", .help = "h", .labels = {{"reason", "b"}}}));
}

TEST_F(Validation, HistogramRangeAndScale) {
  EXPECT_FALSE(ok({.name = "wirespeed_a_seconds",
                   .help = "h",
                   .type = MetricType::kHistogram,
                   .histogram = {.scale = 1e-9, .first = 10, .last = 5}}));
  EXPECT_FALSE(ok({.name = "wirespeed_a_seconds",
                   .help = "h",
                   .type = MetricType::kHistogram,
                   .histogram = {.scale = 1e-9, .first = 0, .last = 63}}));
  EXPECT_FALSE(ok({.name = "wirespeed_a_seconds",
                   .help = "h",
                   .type = MetricType::kHistogram,
                   .histogram = {.scale = 0, .first = 0, .last = 10}}));
  EXPECT_FALSE(ok({.name = "wirespeed_b_total", .help = "h", .scale = -1}));
}

TEST_F(Validation, NothingAfterSeal) {
  ASSERT_TRUE(w.seal()) << w.last_error();
  EXPECT_FALSE(ok({.name = "wirespeed_late_total", .help = "h"}));
  EXPECT_FALSE(w.set_info("k", "v"));
  w.remove();
}

}  // namespace
}  // namespace ws::stats
