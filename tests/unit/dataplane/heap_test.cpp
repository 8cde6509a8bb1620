// The heap the data plane keeps: after warm_heap() on a thread, that thread's first large
// allocations (ring storage at autotune steps) are written without page faults.
#include "dataplane/heap.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

long thread_minor_faults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

// Minor page faults of a fresh thread that warms `warm` bytes and then writes a 4 MiB and
// an 8 MiB block (ring sizes autotuning reaches), freeing each.
long faults_after_warming(size_t warm) {
  long faults = -1;
  std::thread t([&] {
    ws::dp::warm_heap(warm);
    const long before = thread_minor_faults();
    for (size_t size : {size_t{4} << 20, size_t{8} << 20}) {
      void* p = std::malloc(size);
      std::memset(p, 1, size);
      asm volatile("" : : "r"(p) : "memory");  // the writes happen: not elided with the block
      std::free(p);
    }
    faults = thread_minor_faults() - before;
  });
  t.join();
  return faults;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kGlibcMalloc = false;
#else
constexpr bool kGlibcMalloc = true;
#endif

TEST(Heap, WarmedArenaServesRingsWithoutPageFaults) {
  if (!kGlibcMalloc) GTEST_SKIP() << "AddressSanitizer replaces glibc's malloc";
  ws::dp::keep_heap();
  // 12 MiB written = 3072 pages: cold, nearly every page faults.
  EXPECT_GT(faults_after_warming(0), 2000);
  EXPECT_LT(faults_after_warming(32u << 20), 100);
}

TEST(Heap, WarmReportsWhatItWarmed) {
  EXPECT_EQ(ws::dp::warm_heap(0), 0u);
  EXPECT_EQ(ws::dp::warm_heap((3u << 20) + 5), 3u << 20);
}

}  // namespace
