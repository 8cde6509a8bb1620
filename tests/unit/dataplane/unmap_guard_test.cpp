// The unmap guard (dataplane/unmap_guard.hpp) with real threads and real mappings: this
// test executable links the guard's munmap, so its own munmap calls go through it exactly
// as the memif PMD's do in the data plane.
#include "dataplane/unmap_guard.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

namespace ws::dp::unmap_guard {
namespace {

using Clock = std::chrono::steady_clock;

void* map_page() {
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(p, MAP_FAILED);
  return p;
}

// A core thread that holds its mark odd for `hold` once `go` is set.
struct SlowCore {
  std::atomic<bool> go{false}, inside{false}, done{false};
  Clock::time_point left;
  std::thread t;

  SlowCore(uint32_t core, std::chrono::nanoseconds hold) {
    t = std::thread([this, core, hold] {
      CoreMark* m = attach(core);
      ASSERT_NE(m, nullptr);
      while (!go.load()) std::this_thread::yield();
      m->enter();
      inside.store(true);
      std::this_thread::sleep_for(hold);
      left = Clock::now();
      m->leave();
      while (!done.load()) std::this_thread::yield();
      detach(m);
    });
    go.store(true);
    while (!inside.load()) std::this_thread::yield();
  }
  ~SlowCore() {
    done.store(true);
    t.join();
  }
};

TEST(UnmapGuard, MunmapWaitsForACoreInsideAnIteration) {
  void* p = map_page();
  Stats before = stats();
  Clock::time_point unmapped;
  {
    SlowCore core(0, std::chrono::milliseconds(30));
    ASSERT_EQ(munmap(p, 4096), 0);
    unmapped = Clock::now();
    EXPECT_GE(unmapped, core.left) << "munmap returned while the core was inside its iteration";
  }
  Stats after = stats();
  EXPECT_EQ(after.guarded - before.guarded, 1u);
  EXPECT_EQ(after.waits - before.waits, 1u);
  EXPECT_EQ(after.timeouts - before.timeouts, 0u);
  EXPECT_GE(after.wait_ns - before.wait_ns, 10'000'000u);
}

TEST(UnmapGuard, NoWaitWhenNoCoreIsAttached) {
  Stats before = stats();
  void* p = map_page();
  ASSERT_EQ(munmap(p, 4096), 0);
  Stats after = stats();
  EXPECT_EQ(after.guarded, before.guarded);
  EXPECT_EQ(after.waits, before.waits);
}

TEST(UnmapGuard, CoreUnmappingItselfDoesNotWait) {
  // A core that unmaps inside its own iteration must not wait for itself.
  Stats before = stats();
  std::thread t([] {
    CoreMark* m = attach(1);
    ASSERT_NE(m, nullptr);
    m->enter();
    void* p = map_page();
    auto t0 = Clock::now();
    EXPECT_EQ(munmap(p, 4096), 0);
    EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(50));
    m->leave();
    detach(m);
  });
  t.join();
  Stats after = stats();
  EXPECT_EQ(after.guarded, before.guarded);
  EXPECT_EQ(after.waits, before.waits);
}

TEST(UnmapGuard, StuckCoreIsBoundedAndCounted) {
  void* p = map_page();
  Stats before = stats();
  auto t0 = Clock::now();
  {
    SlowCore core(2, std::chrono::nanoseconds(kMaxWaitNs) + std::chrono::milliseconds(200));
    ASSERT_EQ(munmap(p, 4096), 0);
    auto waited = Clock::now() - t0;
    EXPECT_GE(waited, std::chrono::nanoseconds(kMaxWaitNs));
    EXPECT_LT(waited, std::chrono::nanoseconds(kMaxWaitNs) + std::chrono::milliseconds(150));
  }
  Stats after = stats();
  EXPECT_EQ(after.timeouts - before.timeouts, 1u);
  EXPECT_EQ(after.waits - before.waits, 1u);
}

TEST(UnmapGuard, DetachedCoreIsNotWaitedFor) {
  std::thread t([] {
    CoreMark* m = attach(3);
    ASSERT_NE(m, nullptr);
    m->enter();  // left odd on purpose: detach must clear it
    detach(m);
  });
  t.join();
  Stats before = stats();
  void* p = map_page();
  ASSERT_EQ(munmap(p, 4096), 0);
  EXPECT_EQ(stats().waits, before.waits);
}

// The memif protocol in miniature: a poller reads a shared "ring" only after checking a
// connected flag, inside its mark; the disconnecting thread clears the flag and unmaps at
// once, as memif_disconnect() does. Without the guard this faults within a few rounds.
TEST(UnmapGuard, PollerNeverReadsAnUnmappedRing) {
  constexpr int kRounds = 300;
  std::atomic<uint8_t*> ring{nullptr};
  std::atomic<bool> connected{false}, stop{false};
  std::atomic<uint64_t> reads{0};
  std::thread poller([&] {
    CoreMark* m = attach(4);
    ASSERT_NE(m, nullptr);
    uint64_t sum = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      m->enter();
      // Relaxed, like the PMD's plain load of pmd->flags.
      if (connected.load(std::memory_order_relaxed)) {
        uint8_t* r = ring.load(std::memory_order_relaxed);
        for (int i = 0; i < 4096; i += 64) sum += r[i];
        reads.fetch_add(1, std::memory_order_relaxed);
      }
      m->leave();
    }
    detach(m);
    EXPECT_EQ(sum, 0u);
  });
  Stats before = stats();
  for (int round = 0; round < kRounds; ++round) {
    auto* r = static_cast<uint8_t*>(map_page());
    ASSERT_NE(r, MAP_FAILED);
    ring.store(r, std::memory_order_relaxed);
    connected.store(true, std::memory_order_release);
    uint64_t seen = reads.load();
    auto deadline = Clock::now() + std::chrono::milliseconds(100);
    while (reads.load() == seen && Clock::now() < deadline) std::this_thread::yield();
    connected.store(false, std::memory_order_relaxed);
    ASSERT_EQ(munmap(r, 4096), 0);
  }
  stop.store(true);
  poller.join();
  Stats after = stats();
  EXPECT_GE(after.guarded - before.guarded, static_cast<uint64_t>(kRounds));
  EXPECT_EQ(after.timeouts - before.timeouts, 0u);
  EXPECT_GT(reads.load(), static_cast<uint64_t>(kRounds));
}

}  // namespace
}  // namespace ws::dp::unmap_guard
