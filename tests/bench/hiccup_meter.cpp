// How often, and for how long, this machine takes a busy-polling CPU away from its program:
// a loop that does nothing but read the TSC, as a data plane core with `idle: poll` does
// nothing but poll, records every gap between two reads longer than 1 us. A gap is time the
// loop did not run: an interrupt, the kernel's tick, another task, or the hypervisor
// descheduling the virtual CPU. Every round trip in flight across such a gap is late by
// it, so at R round trips a second and G gaps a second longer than X (summed over the CPUs
// of both ends), about G / R of the round trips take longer than X: once that is above
// 0.1 %, the p99.9 of a ping is the machine's figure, not the stack's.
//
//   hiccup_meter SECONDS CPU     prints one JSON line; pins itself to CPU (-1: no pinning)
//
// Run it on each CPU of the benchmark before or after the benchmark, never beside it (the
// loop would take the CPU from the data plane).
#include <sched.h>
#include <x86intrin.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

// Gap thresholds in microseconds: a gap counts in every bucket it exceeds.
constexpr std::array<double, 7> kOverUs{2, 5, 10, 20, 50, 100, 1000};

struct Gaps {
  std::array<uint64_t, kOverUs.size()> over{};
  double max_us = 0;
  double lost_us = 0;  // the sum of the gaps above 1 us
};

// TSC cycles per nanosecond, against the steady clock over 100 ms.
double cycles_per_ns() {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const uint64_t c0 = __rdtsc();
  while (Clock::now() - t0 < std::chrono::milliseconds(100)) {
  }
  const auto ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  return static_cast<double>(__rdtsc() - c0) / ns;
}

Gaps measure(double seconds, double per_ns) {
  Gaps g;
  const uint64_t end = __rdtsc() + static_cast<uint64_t>(seconds * 1e9 * per_ns);
  uint64_t prev = __rdtsc();
  for (uint64_t now = prev; now < end; now = __rdtsc()) {
    const double us = static_cast<double>(now - prev) / per_ns / 1e3;
    prev = now;
    if (us <= 1.0) continue;
    g.lost_us += us;
    g.max_us = us > g.max_us ? us : g.max_us;
    for (size_t i = 0; i < kOverUs.size(); ++i) g.over[i] += us > kOverUs[i] ? 1 : 0;
  }
  return g;
}

bool pin(int cpu) {
  if (cpu < 0) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  const int cpu = argc > 2 ? std::atoi(argv[2]) : -1;
  if (!(seconds > 0 && seconds <= 600)) {
    std::fprintf(stderr, "usage: hiccup_meter SECONDS(0-600] [CPU]\n");
    return 2;
  }
  if (!pin(cpu)) {
    std::perror("hiccup_meter: sched_setaffinity");
    return 2;
  }
  const double per_ns = cycles_per_ns();
  const Gaps g = measure(seconds, per_ns);
  std::printf("{\"cpu\": %d, \"seconds\": %.1f, \"gaps_per_s\": {", cpu, seconds);
  for (size_t i = 0; i < kOverUs.size(); ++i) {
    std::printf("%s\"over_%g_us\": %.1f", i == 0 ? "" : ", ", kOverUs[i],
                static_cast<double>(g.over[i]) / seconds);
  }
  std::printf("}, \"max_us\": %.1f, \"lost_pct\": %.3f}\n", g.max_us,
              g.lost_us / (seconds * 1e6) * 100.0);
  return 0;
}
