// A writer thread publishing as fast as it can while the reader checks that every
// snapshot it accepts is internally consistent.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "control/stats/reader.hpp"
#include "control/stats/writer.hpp"
#include "test_util.hpp"

namespace ws::stats {
namespace {

TEST(Seqlock, SnapshotsAreNeverTorn) {
  test::TempDir dir;
  std::string path = dir.file("q.stats");
  Writer w;
  ASSERT_TRUE(w.create(path));
  // Many words, so a torn copy is likely if the seqlock were broken.
  std::vector<Slot> slots;
  for (int i = 0; i < 200; ++i) {
    auto s = w.register_metric({.name = "wirespeed_queue_receive_packets_total",
                                .help = "q",
                                .labels = {{"queue", std::to_string(i)}}});
    ASSERT_TRUE(s) << w.last_error();
    slots.push_back(*s);
  }
  auto hist = w.register_metric(
      {.name = "wirespeed_ping_rtt_seconds", .help = "h", .type = MetricType::kHistogram});
  ASSERT_TRUE(hist);
  ASSERT_TRUE(w.seal());

  std::atomic<bool> stop{false};
  std::thread writer([&] {
    uint64_t n = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      ++n;
      for (const Slot& s : slots) w.counter(s, 0).set(n);
      w.histogram(*hist, 0).observe(n);
      w.publish(0);
    }
  });

  Reader r(path);
  ASSERT_EQ(r.refresh(), Liveness::kLive);
  uint64_t last = 0;
  int accepted = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (std::chrono::steady_clock::now() < deadline) {
    Snapshot s;
    if (!r.read(&s)) continue;
    ++accepted;
    const auto& m = s.catalog->metrics;
    uint64_t first = s.value(m[0]);
    for (size_t i = 1; i < slots.size(); ++i) ASSERT_EQ(s.value(m[i]), first) << "torn at " << i;
    const MetricInfo& h = m.back();
    uint64_t buckets = 0;
    for (uint32_t b = 0; b < kHistogramBuckets; ++b) buckets += s.value(h, b);
    ASSERT_EQ(buckets, s.value(h, kHistogramCountWord));
    ASSERT_EQ(s.value(h, kHistogramCountWord), first);
    ASSERT_GE(first, last) << "values went backwards";
    last = first;
  }
  stop = true;
  writer.join();
  EXPECT_GT(accepted, 10);
  EXPECT_GT(last, 0u);
}

}  // namespace
}  // namespace ws::stats
