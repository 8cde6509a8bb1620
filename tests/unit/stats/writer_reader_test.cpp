// Writer and Reader in one process: layout, aggregation, info, lifetimes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "control/stats/reader.hpp"
#include "control/stats/writer.hpp"
#include "test_util.hpp"

namespace ws::stats {
namespace {

struct Fixture {
  Writer w;
  Slot rx, drops_a, drops_b, conns, busy, rtt;
};

void build(Fixture& f, const std::string& path, std::vector<uint32_t> lcores = {3, 5}) {
  ASSERT_TRUE(f.w.create(path, {.lcore_ids = std::move(lcores)})) << f.w.last_error();
  auto reg = [&](MetricSpec s) {
    auto slot = f.w.register_metric(s);
    EXPECT_TRUE(slot) << f.w.last_error();
    return slot.value_or(Slot{});
  };
  f.rx = reg({.name = "wirespeed_port_receive_packets_total",
              .help = "rx",
              .labels = {{"port", "p0"}},
              .scope = Scope::kGlobal});
  f.drops_a = reg({.name = "wirespeed_drops_total", .help = "drops", .labels = {{"reason", "a"}}});
  f.drops_b = reg({.name = "wirespeed_drops_total", .help = "drops", .labels = {{"reason", "b"}}});
  f.conns = reg({.name = "wirespeed_tcp_connections",
                 .help = "c",
                 .type = MetricType::kGauge,
                 .labels = {{"state", "established"}}});
  f.busy = reg({.name = "wirespeed_core_busy_seconds_total",
                .help = "busy",
                .scope = Scope::kPerCoreLabeled,
                .scale = 1e-9});
  f.rtt = reg({.name = "wirespeed_ping_rtt_seconds",
               .help = "rtt",
               .type = MetricType::kHistogram,
               .labels = {{"service", "rtt"}},
               .histogram = {.scale = 1e-9, .first = 5, .last = 20}});
  EXPECT_TRUE(f.w.set_info("version", "1.2.3"));
  EXPECT_TRUE(f.w.set_info("port.p0.mac", "02:00:00:00:00:01"));
  ASSERT_TRUE(f.w.seal()) << f.w.last_error();
}

const MetricInfo& find(const Catalog& c, std::string_view name, std::string_view label = {}) {
  for (const auto& m : c.metrics) {
    if (m.name != name) continue;
    if (label.empty()) return m;
    for (const auto& [k, v] : m.labels) {
      if (v == label) return m;
    }
  }
  static MetricInfo none;
  ADD_FAILURE() << "no metric " << name;
  return none;
}

TEST(WriterReader, NothingVisibleBeforeSeal) {
  test::TempDir dir;
  Writer w;
  ASSERT_TRUE(w.create(dir.file("s.stats")));
  Reader r(dir.file("s.stats"));
  EXPECT_EQ(r.refresh(), Liveness::kAbsent);
}

TEST(WriterReader, RoundTrip) {
  test::TempDir dir;
  Fixture f;
  build(f, dir.file("s.stats"));
  f.w.counter(f.rx).set(1000);
  f.w.counter(f.drops_a, 0).add(2);
  f.w.counter(f.drops_a, 1).add(3);
  f.w.counter(f.drops_b, 1).add();
  f.w.gauge(f.conns, 0).add(4);
  f.w.gauge(f.conns, 1).sub(1);
  f.w.counter(f.busy, 0).add(7);
  f.w.counter(f.busy, 1).add(9);
  f.w.histogram(f.rtt, 0).observe(1000);
  f.w.histogram(f.rtt, 1).observe(3000);
  Reader r(dir.file("s.stats"));
  EXPECT_EQ(r.refresh(), Liveness::kLive);
  Snapshot before;
  ASSERT_TRUE(r.read(&before));
  EXPECT_EQ(before.sum("wirespeed_drops_total"), 0u) << "nothing published yet";

  f.w.publish(0);
  f.w.publish(1);
  f.w.publish_global();
  Snapshot s;
  ASSERT_TRUE(r.read(&s));
  const Catalog& c = *s.catalog;
  EXPECT_EQ(c.pid, getpid());
  EXPECT_EQ(c.lcore_ids, (std::vector<uint32_t>{3, 5}));
  EXPECT_EQ(c.info_value("version"), "1.2.3");
  EXPECT_EQ(c.info_value("port.p0.mac"), "02:00:00:00:00:01");
  EXPECT_EQ(c.info_value("missing"), "");
  EXPECT_EQ(s.value(find(c, "wirespeed_port_receive_packets_total")), 1000u);
  EXPECT_EQ(s.sum("wirespeed_drops_total"), 6u);
  EXPECT_EQ(s.sum("wirespeed_drops_total", {{"reason", "a"}}), 5u);
  EXPECT_EQ(static_cast<int64_t>(s.value(find(c, "wirespeed_tcp_connections"))), 3);
  const MetricInfo& busy = find(c, "wirespeed_core_busy_seconds_total");
  EXPECT_EQ(busy.scope, Scope::kPerCoreLabeled);
  EXPECT_DOUBLE_EQ(busy.scale, 1e-9);
  EXPECT_EQ(s.core_value(busy, 0), 7u);
  EXPECT_EQ(s.core_value(busy, 1), 9u);
  const MetricInfo& rtt = find(c, "wirespeed_ping_rtt_seconds");
  EXPECT_EQ(rtt.hist_first, 5);
  EXPECT_EQ(rtt.hist_last, 20);
  EXPECT_EQ(s.value(rtt, histogram_bucket(1000)), 1u);
  EXPECT_EQ(s.value(rtt, histogram_bucket(3000)), 1u);
  EXPECT_EQ(s.value(rtt, kHistogramSumWord), 4000u);
  EXPECT_EQ(s.value(rtt, kHistogramCountWord), 2u);
}

TEST(WriterReader, CoreBlocksDoNotShareCacheLines) {
  test::TempDir dir;
  Fixture f;
  build(f, dir.file("s.stats"), {0, 1, 2});
  for (uint32_t c = 0; c < 3; ++c) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(f.w.core_values(c)) % 64, 0u);
  }
}

TEST(WriterReader, CleanRemoveMeansAbsent) {
  test::TempDir dir;
  Fixture f;
  build(f, dir.file("s.stats"));
  Reader r(dir.file("s.stats"));
  EXPECT_EQ(r.refresh(), Liveness::kLive);
  f.w.remove();
  EXPECT_EQ(r.refresh(), Liveness::kAbsent);
  EXPECT_FALSE(std::filesystem::exists(dir.file("s.stats")));
}

TEST(WriterReader, StoppedIsVisibleThroughAnOpenMapping) {
  test::TempDir dir;
  Fixture f;
  build(f, dir.file("s.stats"));
  Reader r(dir.file("s.stats"));
  ASSERT_EQ(r.refresh(), Liveness::kLive);
  // Keep a second link so the path survives remove(): the reader must still see "stopped".
  ASSERT_EQ(link(dir.file("s.stats").c_str(), dir.file("keep").c_str()), 0);
  f.w.remove();
  ASSERT_EQ(rename(dir.file("keep").c_str(), dir.file("s.stats").c_str()), 0);
  EXPECT_EQ(r.refresh(), Liveness::kStopped);
}

TEST(WriterReader, RestartIsDetectedAndCountersStartOver) {
  test::TempDir dir;
  std::string path = dir.file("s.stats");
  Reader r(path);
  auto first = std::make_unique<Fixture>();
  build(*first, path);
  first->w.counter(first->drops_a, 0).add(100);
  first->w.publish(0);
  ASSERT_EQ(r.refresh(), Liveness::kLive);
  Snapshot s1;
  ASSERT_TRUE(r.read(&s1));
  EXPECT_EQ(s1.sum("wirespeed_drops_total"), 100u);
  // A crash: the old writer never removes its file; the new one renames over it.
  Fixture second;
  build(second, path);
  ASSERT_EQ(r.refresh(), Liveness::kLive);
  Snapshot s2;
  ASSERT_TRUE(r.read(&s2));
  EXPECT_NE(s2.catalog->instance_id, s1.catalog->instance_id);
  EXPECT_EQ(s2.sum("wirespeed_drops_total"), 0u);
  first.reset();  // the old writer's destructor must not touch the new file
  EXPECT_EQ(r.refresh(), Liveness::kLive);
}

TEST(WriterReader, StaleHeartbeat) {
  test::TempDir dir;
  Fixture f;
  build(f, dir.file("s.stats"));
  Reader r(dir.file("s.stats"), {.stale_after_s = 0.05});
  EXPECT_EQ(r.refresh(), Liveness::kLive);
  usleep(100'000);
  EXPECT_EQ(r.refresh(), Liveness::kStale);
  f.w.heartbeat();
  EXPECT_EQ(r.refresh(), Liveness::kLive);
  EXPECT_LT(r.heartbeat_age_s(), 0.05);
}

TEST(WriterReader, GarbageFileIsInvalidNotACrash) {
  test::TempDir dir;
  std::string path = dir.file("s.stats");
  {
    std::ofstream out(path);
    out << std::string(8192, 'x');
  }
  Reader r(path);
  EXPECT_EQ(r.refresh(), Liveness::kInvalid);
  EXPECT_NE(r.error().find("magic"), std::string::npos);
  {
    std::ofstream out(path);
    out << "short";
  }
  EXPECT_EQ(r.refresh(), Liveness::kInvalid);
}

TEST(WriterReader, TruncatedSegmentIsInvalid) {
  test::TempDir dir;
  std::string path = dir.file("s.stats");
  Fixture f;
  build(f, path);
  ASSERT_EQ(truncate(path.c_str(), 4096 + 100), 0);  // header intact, tables cut off
  Reader r(path);
  EXPECT_EQ(r.refresh(), Liveness::kInvalid);
}

}  // namespace
}  // namespace ws::stats
