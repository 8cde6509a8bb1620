// Keeps a PMD from unmapping memory that a pipeline core is reading.
//
// The problem (a dead peer must never crash us): when a memif peer goes away,
// DPDK 22.11's memif PMD handles it in the EAL interrupt thread: memif_disconnect()
// (drivers/net/memif/memif_socket.c) clears ETH_MEMIF_FLAG_CONNECTED and then at once
// calls memif_free_regions(), which munmap()s the shared rings and buffers. Nothing
// synchronises with a core that is inside rte_eth_rx_burst/tx_burst on that port, and no
// ethdev event precedes the unmap (the PMD never calls rte_eth_dev_callback_process: no
// LSC or RMV callback could run first), so the core reads unmapped memory and the process
// dies with SIGSEGV inside librte_net_memif.
//
// The fix, a quiescent-state scheme in the spirit of RCU:
// - each pipeline core owns a CoreMark and bumps it to odd when a loop iteration starts
//   (before its first burst) and back to even when the iteration ends (before it idles);
//   two plain stores per iteration, no fence, no read-modify-write;
// - the executable defines munmap() and exports it (meson: --export-dynamic-symbol), so
//   the PMD's call binds to it. Called from a thread that is not a pipeline core while
//   cores are attached, it first waits until every core that was inside an iteration has
//   left it, then unmaps. The PMD cleared the CONNECTED flag before calling munmap, and
//   its bursts test that flag first, so an iteration that starts after our snapshot
//   returns from the burst at once without touching the rings.
// The wait is bounded (kMaxWait) and counted; munmap from a pipeline core never waits
// (it would wait for itself), nor does any munmap once every core has detached (our own
// shutdown: ports are closed after the pipelines finish).
#pragma once

#include <atomic>
#include <cstdint>

namespace ws::dp::unmap_guard {

// One per pipeline core, alone on its cache line: written only by its core, read by a
// thread in munmap.
class alignas(64) CoreMark {
 public:
  // Start of a loop iteration: from here until leave() the core may be in a burst.
  void enter() {
    seq_.store(++local_, std::memory_order_relaxed);
    // Without membarrier() (kernel < 4.14 or filtered) the store must be ordered before
    // the PMD's load of its CONNECTED flag by the core itself (Dekker: store, then load).
    if (fence_) std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  // End of the iteration: release, so the PMD's reads of the rings are done before a
  // waiter can see the even value (free on x86, where stores are not reordered with
  // earlier loads).
  void leave() { seq_.store(++local_, std::memory_order_release); }

 private:
  friend class Registry;
  std::atomic<uint64_t> seq_{0};
  uint64_t local_ = 0;
  bool fence_ = false;
};

struct Stats {
  uint64_t guarded = 0;      // munmap calls from other threads while cores were attached
  uint64_t waits = 0;        // of those, calls that found a core inside an iteration and waited
  uint64_t timeouts = 0;     // waits that hit kMaxWait and unmapped anyway
  uint64_t wait_ns = 0;      // time spent waiting
  uint64_t max_wait_ns = 0;  // the longest single wait
};

// The calling thread becomes pipeline core `core` (< kMaxCores): munmap calls it makes
// itself never wait, and munmap calls from other threads wait for its mark. Called on
// the core's own thread before its loop starts. Null when `core` is out of range.
CoreMark* attach(uint32_t core);
// The core stops (its mark goes even for good); when the last core detaches, munmap no
// longer waits.
void detach(CoreMark* mark);
// What munmap has done so far (any thread).
Stats stats();
// True when cross-thread ordering uses membarrier(2) (no fence on the cores' side).
bool uses_membarrier();

constexpr uint32_t kMaxCores = 128;
// A core leaves an iteration within microseconds; the bound only matters when a core is
// stuck or descheduled for long on a loaded machine, where waiting longer is still better
// than unmapping under it. The EAL interrupt thread that waits has nothing urgent to do.
constexpr int64_t kMaxWaitNs = 250'000'000;

}  // namespace ws::dp::unmap_guard
