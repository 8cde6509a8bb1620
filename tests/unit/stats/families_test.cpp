// Snapshot -> Prometheus families, through the real text serializer, and the collector's
// lifetime behaviour (absent data plane, counters that must not go backwards).
#include "control/metrics/families.hpp"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include "control/metrics/collector.hpp"
#include "control/stats/writer.hpp"
#include "test_util.hpp"

namespace ws::metrics {
namespace {

using namespace ws::stats;

std::string text(const std::vector<prometheus::MetricFamily>& fams) {
  return prometheus::TextSerializer().Serialize(fams);
}

TEST(Families, SerializesEveryKind) {
  test::TempDir dir;
  Writer w;
  ASSERT_TRUE(w.create(dir.file("m.stats"), {.lcore_ids = {2, 4}}));
  auto rx = w.register_metric({.name = "wirespeed_port_receive_packets_total",
                               .help = "rx",
                               .labels = {{"port", "p0"}},
                               .scope = Scope::kGlobal});
  auto conns = w.register_metric({.name = "wirespeed_tcp_connections",
                                  .help = "c",
                                  .type = MetricType::kGauge,
                                  .labels = {{"state", "listen"}}});
  auto busy = w.register_metric({.name = "wirespeed_core_busy_seconds_total",
                                 .help = "b",
                                 .scope = Scope::kPerCoreLabeled,
                                 .scale = 1e-9});
  auto rtt = w.register_metric({.name = "wirespeed_ping_rtt_seconds",
                                .help = "rtt",
                                .type = MetricType::kHistogram,
                                .labels = {{"service", "rtt"}},
                                .histogram = {.scale = 1e-6, .first = 0, .last = 3}});
  ASSERT_TRUE(rx && conns && busy && rtt) << w.last_error();
  ASSERT_TRUE(w.seal());
  w.counter(*rx).set(12);
  w.gauge(*conns, 0).set(2);
  w.gauge(*conns, 1).set(-1);  // per-core gauges may be negative; the sum is what counts
  w.counter(*busy, 0).add(1'500'000'000);
  w.counter(*busy, 1).add(250'000'000);
  for (uint64_t us : {1, 3, 5, 100}) w.histogram(*rtt, 1).observe(us);
  w.publish(0);
  w.publish(1);
  w.publish_global();

  Reader r(dir.file("m.stats"));
  ASSERT_EQ(r.refresh(), Liveness::kLive);
  Snapshot s;
  ASSERT_TRUE(r.read(&s));
  std::string t = text(families_from_snapshot(s));
  EXPECT_NE(t.find("# TYPE wirespeed_port_receive_packets_total counter"), std::string::npos);
  EXPECT_NE(t.find("wirespeed_port_receive_packets_total{port=\"p0\"} 12"), std::string::npos);
  EXPECT_NE(t.find("wirespeed_tcp_connections{state=\"listen\"} 1"), std::string::npos);
  EXPECT_NE(t.find("wirespeed_core_busy_seconds_total{core=\"2\"} 1.5"), std::string::npos) << t;
  EXPECT_NE(t.find("wirespeed_core_busy_seconds_total{core=\"4\"} 0.25"), std::string::npos);
  // Buckets: le=1e-6 (values 0,1), 2e-6, 4e-6 (3), 8e-6 (5), +Inf (100).
  EXPECT_NE(t.find("wirespeed_ping_rtt_seconds_bucket{service=\"rtt\",le=\"1e-06\"} 1"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("wirespeed_ping_rtt_seconds_bucket{service=\"rtt\",le=\"4e-06\"} 2"),
            std::string::npos);
  EXPECT_NE(t.find("wirespeed_ping_rtt_seconds_bucket{service=\"rtt\",le=\"8e-06\"} 3"),
            std::string::npos);
  EXPECT_NE(t.find("wirespeed_ping_rtt_seconds_bucket{service=\"rtt\",le=\"+Inf\"} 4"),
            std::string::npos);
  EXPECT_NE(t.find("wirespeed_ping_rtt_seconds_count{service=\"rtt\"} 4"), std::string::npos);
  EXPECT_NE(t.find("wirespeed_ping_rtt_seconds_sum{service=\"rtt\"} 0.000109"), std::string::npos);
}

TEST(Collector, AbsentDataPlaneServesUpZeroAndBuildInfo) {
  test::TempDir dir;
  SegmentCollector c(dir.file("none.stats"));
  auto fams = c.Collect();
  ASSERT_EQ(fams.size(), 2u);
  std::string t = text(fams);
  EXPECT_NE(t.find("wirespeed_up 0"), std::string::npos);
  EXPECT_NE(t.find("wirespeed_build_info{version=\""), std::string::npos);
}

TEST(Collector, PicksUpStartAndCountersNeverGoBackwards) {
  test::TempDir dir;
  std::string path = dir.file("c.stats");
  SegmentCollector c(path);
  EXPECT_NE(text(c.Collect()).find("wirespeed_up 0"), std::string::npos);

  auto w = std::make_unique<Writer>();
  ASSERT_TRUE(w->create(path));
  auto rx = w->register_metric({.name = "wirespeed_port_receive_packets_total",
                                .help = "rx",
                                .labels = {{"port", "p0"}},
                                .scope = Scope::kGlobal});
  ASSERT_TRUE(rx && w->seal());
  w->counter(*rx).set(100);
  w->publish_global();
  std::string t = text(c.Collect());
  EXPECT_NE(t.find("wirespeed_up 1"), std::string::npos);
  EXPECT_NE(t.find("wirespeed_dataplane_start_time_seconds"), std::string::npos);
  EXPECT_NE(t.find("{port=\"p0\"} 100"), std::string::npos);

  w->counter(*rx).set(60);  // e.g. the NIC's counters were reset under the data plane
  w->publish_global();
  EXPECT_NE(text(c.Collect()).find("{port=\"p0\"} 100"), std::string::npos);

  // A restart is a new lifetime: the counter may start over.
  w->remove();
  EXPECT_NE(text(c.Collect()).find("wirespeed_up 0"), std::string::npos);
  w = std::make_unique<Writer>();
  ASSERT_TRUE(w->create(path));
  rx = w->register_metric({.name = "wirespeed_port_receive_packets_total",
                           .help = "rx",
                           .labels = {{"port", "p0"}},
                           .scope = Scope::kGlobal});
  ASSERT_TRUE(rx && w->seal());
  w->counter(*rx).set(5);
  w->publish_global();
  t = text(c.Collect());
  EXPECT_NE(t.find("wirespeed_up 1"), std::string::npos);
  EXPECT_NE(t.find("{port=\"p0\"} 5"), std::string::npos) << t;
  w->remove();
}

}  // namespace
}  // namespace ws::metrics
