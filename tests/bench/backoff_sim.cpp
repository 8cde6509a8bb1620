// pipeline.backoff_us on a virtual clock (the default is chosen by measurement).
//
// On this VM the memif benchmark (tests/bench/run.sh backoff, table 13) cannot rank the
// backoff: a bulk source hands TCP whole batches, which never wait for the deadline, and the
// machine's speed drifts by more than the differences. What the backoff trades is visible
// only where batching mode holds an open batch: a source that sends at a fixed rate, fast
// enough that more than a batch is in flight. Then a longer backoff means fewer, fuller
// segments (less work per message at both ends) and a longer wait for the messages in the
// open batch. This program measures both, deterministically, with the real `source` service
// and TCP over the simulator's 10 Gbit/s link (50 us each way):
//   - segments per 1000 messages (data segments on the link, so per-packet work);
//   - the delay of each message from its place in the rate schedule to its arrival at the
//     receiver (p50, p99, max), after a warm-up.
// For each rate it prints one Markdown table row per backoff. Exit 1 if any message is lost
// or wrong (every payload byte is checked).
//   build/tests/bench/backoff_sim [virtual_ms]   (default 40 ms of traffic per run; the
//   meson test `backoff-sim` runs 10 ms as a delivery check)
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "stack/apps/tcp_clients.hpp"
#include "stack/codec/framing.hpp"
#include "stack/iface/stack.hpp"
#include "tests/sim/apps.hpp"

namespace ws {
namespace {

constexpr uint16_t kPort = 9;

struct Result {
  double segments_per_k = 0;
  double p50_us = 0, p99_us = 0, max_us = 0;
  uint64_t batching_entries = 0;
  uint64_t messages = 0;
  bool ok = false;
};

double percentile(std::vector<int64_t>& v, double q) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(i), v.end());
  return static_cast<double>(v[i]) / 1000.0;
}

Result run(uint32_t size, uint64_t rate, Duration backoff, Duration traffic) {
  sim::LinkParams link;
  link.delay = Duration::micros(50);
  link.rate_bytes_per_sec = 1.25e9;  // 10 Gbit/s
  auto net = std::make_unique<sim::Net>(link, link, 7);
  Stack dummy;  // the TCP services do not use the IP stack
  // Every payload byte and length checked; the arrival time of each message kept.
  std::vector<Instant> arrival;
  sim::FrameReceiver rx(net->b, kPort, size, [&] { arrival.push_back(net->now); });
  ClientParams p;
  p.target = {sim::kAddrB, kPort};
  p.message_size = size;
  p.rate = rate;
  p.count = static_cast<uint64_t>(traffic.secs() * static_cast<double>(rate));
  p.duration = Duration::zero();
  p.pipeline.backoff = backoff;
  TcpSourceService src("load", p, net->a);
  Result res;
  if (!rx.listening || !src.start(dummy, net->now)) return res;
  const Instant t0 = net->now;
  const Instant end = t0 + traffic + Duration::seconds(2);
  while (arrival.size() < p.count && net->now < end) {
    net->step(earliest(end, src.poll(net->now)));
  }
  res.messages = arrival.size();
  res.ok = res.messages == p.count && rx.bad == 0;
  // Message i is due at t0 + i / rate (ClientService::rate_allowance). The first quarter
  // is warm-up (handshake, slow start).
  std::vector<int64_t> delay;
  for (size_t i = arrival.size() / 4; i < arrival.size(); ++i) {
    const int64_t due =
        t0.ns() + static_cast<int64_t>(static_cast<double>(i) * 1e9 / static_cast<double>(rate));
    delay.push_back(arrival[i].ns() - due);
  }
  res.p50_us = percentile(delay, 0.50);
  res.p99_us = percentile(delay, 0.99);
  res.max_us = delay.empty()
                   ? 0
                   : static_cast<double>(*std::max_element(delay.begin(), delay.end())) / 1000.0;
  res.segments_per_k = res.messages == 0 ? 0
                                         : 1000.0 * static_cast<double>(net->link_ab.offered) /
                                               static_cast<double>(res.messages);
  pipeline::PipelineCounters pc;
  src.add_pipeline_counters(pc);
  res.batching_entries = pc.batching_entries;
  net->a.shutdown_all(net->now);
  net->b.shutdown_all(net->now);
  return res;
}

}  // namespace
}  // namespace ws

int main(int argc, char** argv) {
  using ws::Duration;
  const int64_t ms = argc > 1 ? std::atoll(argv[1]) : 40;
  if (ms <= 0 || ms > 10000) {
    std::fprintf(stderr, "usage: backoff_sim [virtual_ms 1..10000]\n");
    return 2;
  }
  struct Load {
    uint32_t size;
    uint64_t rate;
  };
  // 64-byte frames are 68 bytes: 10 and 14 M msg/s are 5.4 and 7.6 Gbit/s of stream, so more
  // than a batch (65160 bytes) is in flight over the 100 us round trip; 4 M msg/s stays
  // below a batch. 1 KiB at 1 M msg/s is 8.2 Gbit/s.
  const Load loads[] = {{64, 4'000'000}, {64, 10'000'000}, {64, 14'000'000}, {1024, 1'000'000}};
  const int backoffs_us[] = {0, 5, 10, 20, 50, 100, 200};
  bool all_ok = true;
  // The suggestion: the smallest backoff that, at every load with more than a batch in flight
  // (rate x frame x 100 us round trip above 65160 bytes), sends within 10 % of the fewest
  // segments any backoff reaches there (per-packet work near its floor, the open batch
  // waiting as little as possible), and at every load below that does not add more than
  // 10 us to the median delay of backoff 0 (a link that keeps up sends at once).
  std::vector<bool> within(std::size(backoffs_us), true);
  std::printf(
      "| message B | rate msg/s | backoff_us | segments per 1000 msg | delay p50 us | "
      "delay p99 us | delay max us | batching entries |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const Load& l : loads) {
    std::vector<double> segs, p50;
    for (const int b : backoffs_us) {
      const ws::Result r = ws::run(l.size, l.rate, Duration::micros(b), Duration::millis(ms));
      all_ok = all_ok && r.ok;
      segs.push_back(r.segments_per_k);
      p50.push_back(r.p50_us);
      std::printf("| %u | %.1f M | %d | %.1f | %.1f | %.1f | %.1f | %" PRIu64 " |%s\n", l.size,
                  static_cast<double>(l.rate) / 1e6, b, r.segments_per_k, r.p50_us, r.p99_us,
                  r.max_us, r.batching_entries, r.ok ? "" : " FAILED");
      std::fflush(stdout);
    }
    const bool over_a_batch =
        static_cast<double>(l.rate) * (l.size + ws::kFrameHeaderBytes) * 100e-6 > 65160;
    const double fewest = *std::min_element(segs.begin(), segs.end());
    for (size_t i = 0; i < segs.size(); ++i) {
      within[i] = within[i] && (over_a_batch ? segs[i] <= fewest * 1.10 : p50[i] <= p50[0] + 10);
    }
  }
  for (size_t i = 0; i < std::size(backoffs_us); ++i) {
    if (within[i]) {
      std::printf(
          "\nsuggested backoff_us: %d (the smallest within 10 %% of the fewest segments at "
          "every load with more than a batch in flight, and within 10 us of backoff 0's "
          "median delay below that)\n",
          backoffs_us[i]);
      break;
    }
  }
  return all_ok ? 0 : 1;
}
