#include "dataplane/unmap_guard.hpp"

#include <dlfcn.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>

namespace ws::dp::unmap_guard {

namespace {

using MunmapFn = int (*)(void*, size_t);

// The next munmap after ours, resolved before main() (init_guard). Until then, and if
// it cannot be resolved, the system call itself.
std::atomic<MunmapFn> g_next{nullptr};

int next_munmap(void* addr, size_t len) {
  MunmapFn f = g_next.load(std::memory_order_acquire);
  if (f != nullptr) return f(addr, len);
  return static_cast<int>(syscall(SYS_munmap, addr, len));
}

// True on the threads of pipeline cores (set by attach()).
thread_local bool t_core = false;

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

long membarrier(int cmd) { return syscall(__NR_membarrier, cmd, 0u, 0); }

}  // namespace

class Registry {
 public:
  // Before main(), on the only thread.
  void init() {
    // WS_UNMAP_GUARD=off turns the guard into a plain munmap: a diagnostic switch, to
    // show what the guard prevents (test_memif_disconnect.py crashes without it).
    const char* env = getenv("WS_UNMAP_GUARD");
    disabled_ = env != nullptr && strcmp(env, "off") == 0;
    // PRIVATE_EXPEDITED: one call makes every running thread of the process execute a
    // full barrier (membarrier(2)); the process registers once before first use.
    long cmds = membarrier(MEMBARRIER_CMD_QUERY);
    membarrier_ = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
                  membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  }

  CoreMark* attach(uint32_t core) {
    if (core >= kMaxCores) return nullptr;
    CoreMark& m = marks_[core];
    m.fence_ = !membarrier_;
    // A mark that a previous attach left even stays even; make sure of it.
    if ((m.local_ & 1) != 0) m.leave();
    t_core = true;
    uint32_t end = core + 1;
    uint32_t cur = slots_.load(std::memory_order_relaxed);
    while (cur < end) {
      if (slots_.compare_exchange_weak(cur, end)) break;
    }
    attached_.fetch_add(1);
    return &m;
  }

  void detach(CoreMark* m) {
    if (m == nullptr) return;
    if ((m->local_ & 1) != 0) m->leave();
    attached_.fetch_sub(1);
  }

  // Called by munmap on any thread before the real unmap.
  void quiesce() {
    if (t_core || disabled_ || attached_.load(std::memory_order_acquire) == 0) return;
    guarded_.fetch_add(1, std::memory_order_relaxed);
    // Order the caller's earlier stores (the PMD cleared its CONNECTED flag) before our
    // reads of the marks, on both sides: after membarrier returns, each core has passed
    // a full barrier, so either its odd store is visible to us below, or its later load
    // of the flag sees the flag cleared (and its burst touches nothing).
    if (membarrier_) {
      membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
    } else {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    uint32_t n = slots_.load(std::memory_order_acquire);
    std::array<uint64_t, kMaxCores> seen{};
    bool any = false;
    for (uint32_t i = 0; i < n; ++i) {
      seen[i] = marks_[i].seq_.load(std::memory_order_acquire);
      any = any || (seen[i] & 1) != 0;
    }
    if (!any) return;
    waits_.fetch_add(1, std::memory_order_relaxed);
    int64_t start = now_ns();
    for (uint32_t i = 0; i < n; ++i) {
      if ((seen[i] & 1) == 0) continue;
      // Any change means the iteration that was running has ended.
      while (marks_[i].seq_.load(std::memory_order_acquire) == seen[i]) {
        if (now_ns() - start > kMaxWaitNs) {
          timeouts_.fetch_add(1, std::memory_order_relaxed);
          account(now_ns() - start);
          return;
        }
        sched_yield();
      }
    }
    account(now_ns() - start);
  }

  void account(int64_t waited) {
    auto ns = static_cast<uint64_t>(waited);
    wait_ns_.fetch_add(ns, std::memory_order_relaxed);
    uint64_t max = max_wait_ns_.load(std::memory_order_relaxed);
    while (ns > max) {
      if (max_wait_ns_.compare_exchange_weak(max, ns, std::memory_order_relaxed)) break;
    }
  }

  Stats stats() const {
    Stats s;
    s.guarded = guarded_.load(std::memory_order_relaxed);
    s.waits = waits_.load(std::memory_order_relaxed);
    s.timeouts = timeouts_.load(std::memory_order_relaxed);
    s.wait_ns = wait_ns_.load(std::memory_order_relaxed);
    s.max_wait_ns = max_wait_ns_.load(std::memory_order_relaxed);
    return s;
  }

  bool uses_membarrier() const { return membarrier_; }

 private:
  std::array<CoreMark, kMaxCores> marks_{};
  std::atomic<uint32_t> slots_{0};     // marks in use: 0 .. slots_-1
  std::atomic<uint32_t> attached_{0};  // cores between attach and detach
  bool membarrier_ = false;            // written by init() before main()
  bool disabled_ = false;              // likewise
  std::atomic<uint64_t> guarded_{0}, waits_{0}, timeouts_{0}, wait_ns_{0}, max_wait_ns_{0};
};

namespace {
// Constant-initialised (no constructor runs), so munmap may use it at any time.
constinit Registry g_registry;

// Before main(): the next munmap after ours (libc's, or a sanitizer's interceptor), and
// the membarrier registration.
__attribute__((constructor)) void init_guard() {
  g_next.store(reinterpret_cast<MunmapFn>(dlsym(RTLD_NEXT, "munmap")), std::memory_order_release);
  g_registry.init();
}
}  // namespace

CoreMark* attach(uint32_t core) { return g_registry.attach(core); }
void detach(CoreMark* mark) { g_registry.detach(mark); }
Stats stats() { return g_registry.stats(); }
bool uses_membarrier() { return g_registry.uses_membarrier(); }

}  // namespace ws::dp::unmap_guard

// The executable's munmap, which the memif PMD (and EAL) bind to: see unmap_guard.hpp.
extern "C" int munmap(void* addr, size_t len) noexcept {
  ws::dp::unmap_guard::g_registry.quiesce();
  return ws::dp::unmap_guard::next_munmap(addr, len);
}
