// Seqlock copy helpers for the value blocks (one writer per block, any number of readers
// in other processes). The writer never waits; a reader retries when it raced a publish.
// Words are copied with relaxed atomic_ref accesses: on x86-64 and arm64 these compile to
// plain loads and stores, and they keep the concurrent copy free of data races.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ws::stats {

// Writer side: copy `n` words from private memory into the shared block.
inline void seqlock_publish(uint64_t* seq, uint64_t* dst, const uint64_t* src, size_t n) {
  std::atomic_ref<uint64_t> s(*seq);
  uint64_t v = s.load(std::memory_order_relaxed);
  s.store(v + 1, std::memory_order_relaxed);  // odd: copy in progress
  std::atomic_thread_fence(std::memory_order_release);
  for (size_t i = 0; i < n; ++i) {
    std::atomic_ref<uint64_t>(dst[i]).store(src[i], std::memory_order_relaxed);
  }
  s.store(v + 2, std::memory_order_release);  // even: consistent again
}

// Reader side: one attempt. Returns true when `dst` holds a consistent copy.
inline bool seqlock_try_read(const uint64_t* seq, uint64_t* dst, const uint64_t* src, size_t n,
                             uint64_t* seq_out = nullptr) {
  std::atomic_ref<uint64_t> s(*const_cast<uint64_t*>(seq));
  uint64_t before = s.load(std::memory_order_acquire);
  if (before & 1) return false;
  for (size_t i = 0; i < n; ++i) {
    dst[i] =
        std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(src + i)).load(std::memory_order_relaxed);
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  uint64_t after = s.load(std::memory_order_relaxed);
  if (seq_out != nullptr) *seq_out = before;
  return before == after;
}

}  // namespace ws::stats
