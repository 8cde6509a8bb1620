#include "dataplane/heap.hpp"

#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace ws::dp {

namespace {

// glibc's limit for M_MMAP_THRESHOLD on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX).
constexpr int kMmapThreshold = 32 << 20;
// Warmed in pieces well below the threshold, so that they come from the arena itself; the
// pieces freed together merge back into its top chunk, which keep_heap() keeps.
constexpr size_t kPiece = size_t{1} << 20;

}  // namespace

// glibc's defaults give the heap's top back to the kernel once 128 KiB of it are free and
// grow it again page fault by page fault; under a connection overload that took a third of
// the core (malloc's slow path and the faults). Blocks of 128 KiB and more (a ring past its
// first autotune steps) get a mapping of their own, zero-filled page by page at first write
// and unmapped when freed: a fresh data plane's first bulk transfer spent a quarter of its
// core in those page faults.
void keep_heap() {
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 16 << 20);
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
}

size_t warm_heap(size_t bytes) {
  std::vector<void*> pieces;
  pieces.reserve(bytes / kPiece);
  for (size_t done = 0; done + kPiece <= bytes; done += kPiece) {
    void* p = std::malloc(kPiece);
    if (p == nullptr) break;  // less memory than asked for: warm what there is
    std::memset(p, 0, kPiece);
    asm volatile("" : : "r"(p) : "memory");  // the writes are the point: keep them
    pieces.push_back(p);
  }
  for (void* p : pieces) std::free(p);
  return pieces.size() * kPiece;
}

}  // namespace ws::dp
