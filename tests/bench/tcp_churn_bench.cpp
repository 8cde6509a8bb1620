// Connection churn through the real TCP engine and the real services, in one process: a
// `ping` client with `reconnect: true` (TcpPingService) against the length32 `echo`
// (TcpEchoService), two TcpStacks back to back (tests/support/tcp_pair.hpp) on a virtual clock
// that advances a fixed time per completed connection, so that TIME_WAIT populations, timer
// horizons and port reuse look like a real run at that rate. Every interval it prints the
// rate over wall-clock and over this thread's CPU time (the latter is what to compare on a
// shared machine), CPU counters per connection (instructions, cycles, page faults: from
// perf_event_open when the kernel allows it) and the sizes that could grow (tables, timer
// queues, Tcb slots, spare rings, the echo's per-connection states, malloc heap), so a
// decline over time shows without memif or scheduler noise.
//
// Overload (it must recover by itself when the load drops): with
// --overload N a second ping client with N connections in flight joins after
// --overload-at connections and is stopped (its connections aborted, as a client process
// that exits) after --overload-for more; the server's SYN queue (tcp.syn_backlog, 256)
// turns most of its SYNs away, so they are retransmitted on the 1 s RTO with backoff. The
// `phase` column says before/overload/after, and the end compares the after phase with
// the before phase (rate, instructions per connection, sizes).
//   build/tests/bench/tcp_churn_bench [--connections N] [--interval N] [--in-flight N]
//                                     [--ns-per-connection NS] [--overload N]
//                                     [--overload-at N] [--overload-for N]
// Defaults: 20 M connections, 1 M per interval, 64 in flight, 4000 ns (250 k/s virtual), no
// overload; with --overload, it starts at a third of the connections and lasts an interval.
#include <linux/perf_event.h>
#include <malloc.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "stack/apps/tcp_clients.hpp"
#include "stack/apps/tcp_services.hpp"
#include "stack/iface/stack.hpp"
#include "tests/support/tcp_pair.hpp"

namespace {

using ws::Duration;
using ws::Instant;

// One hardware or software counter of this thread, user space only where that applies.
class PerfCounter {
 public:
  PerfCounter(uint32_t type, uint64_t config) {
    perf_event_attr a{};
    a.size = sizeof a;
    a.type = type;
    a.config = config;
    a.exclude_kernel = type == PERF_TYPE_HARDWARE ? 1 : 0;
    a.exclude_hv = 1;
    fd_ = static_cast<int>(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
  }
  ~PerfCounter() {
    if (fd_ >= 0) close(fd_);
  }
  PerfCounter(const PerfCounter&) = delete;
  PerfCounter& operator=(const PerfCounter&) = delete;
  bool ok() const { return fd_ >= 0; }
  uint64_t read_value() const {
    uint64_t v = 0;
    if (fd_ < 0 || read(fd_, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) return 0;
    return v;
  }

 private:
  int fd_ = -1;
};

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Options {
  uint64_t connections = 20'000'000;
  uint64_t interval = 1'000'000;
  uint32_t in_flight = 64;
  int64_t ns_per_connection = 4000;
  uint32_t overload = 0;  // flood connections in flight; 0: no overload phase
  uint64_t overload_at = 0;
  uint64_t overload_for = 0;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return false;
    char* end = nullptr;
    unsigned long long v = std::strtoull(argv[++i], &end, 10);
    if (end == nullptr || *end != '\0' || v == 0) return false;
    if (a == "--connections") {
      o.connections = v;
    } else if (a == "--interval") {
      o.interval = v;
    } else if (a == "--in-flight" && v <= 60000) {
      o.in_flight = static_cast<uint32_t>(v);
    } else if (a == "--ns-per-connection" && v <= 1'000'000'000) {
      o.ns_per_connection = static_cast<int64_t>(v);
    } else if (a == "--overload" && v <= 60000) {
      o.overload = static_cast<uint32_t>(v);
    } else if (a == "--overload-at") {
      o.overload_at = v;
    } else if (a == "--overload-for") {
      o.overload_for = v;
    } else {
      return false;
    }
  }
  if (o.overload_at == 0) o.overload_at = o.connections / 3;
  if (o.overload_for == 0) o.overload_for = o.interval;
  return o.interval <= o.connections;
}

// As the stability benchmark configures both processes (tests/bench/bench_services.py).
ws::tcp::TcpConfig churn_config(uint8_t key) {
  ws::tcp::TcpConfig c = ws::test::bench_config(key);
  c.time_wait = Duration::millis(1000);
  c.time_wait_reuse = Duration::millis(5);
  return c;
}

enum class Phase : uint8_t { kBefore, kOverload, kAfter };
const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kBefore:
      return "before";
    case Phase::kOverload:
      return "overload";
    case Phase::kAfter:
      return "after";
  }
  return "?";
}

// One interval's figures, kept per phase for the closing comparison.
struct Sample {
  Phase phase = Phase::kBefore;
  double cpu_rate = 0;
  double ins = 0;
  ws::tcp::TcpTableSizes cli, srv;
  size_t echo_states = 0;
  uint64_t srv_memory = 0;
};

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: %s [--connections N] [--interval N] [--in-flight N] "
                 "[--ns-per-connection NS] [--overload N] [--overload-at N] [--overload-for N]\n",
                 argv[0]);
    return 2;
  }
  ws::test::Pair p(churn_config(1), churn_config(2));
  ws::Stack dummy;  // the TCP services do not use the IP stack
  ws::TcpEchoService echo("echo", 7, p.b);
  ws::ClientParams cp;
  cp.target = {ws::test::kAddrB, 7};
  cp.message_size = 64;
  cp.connections = o.in_flight;
  cp.duration = Duration::zero();
  cp.reconnect = true;
  ws::TcpPingService ping("cr", cp, p.a);
  if (!echo.start(dummy, p.now) || !ping.start(dummy, p.now)) {
    std::fprintf(stderr, "services did not start\n");
    return 1;
  }
  std::unique_ptr<ws::TcpPingService> flood;
  PerfCounter ins(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
  PerfCounter flt(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS);
  std::printf("# %" PRIu64 " connections, %u in flight, virtual %.0f connections/s%s\n",
              o.connections, o.in_flight, 1e9 / static_cast<double>(o.ns_per_connection),
              ins.ok() ? "" : " (no perf counters: instructions/cycles shown as 0)");
  if (o.overload != 0)
    std::printf("# overload: %u more in flight from %" PRIu64 " for %" PRIu64
                " connections (server syn_backlog %u)\n",
                o.overload, o.overload_at, o.overload_for, p.b.config().syn_backlog);
  // cli_tw: the client's TIME_WAIT population; srv_syn: the server's SYN queue
  // (SYN_RECEIVED); slots/rings: the server's Tcb slots and spare rings; tbl_cap: the
  // server's connection table capacity; echo: the echo's per-connection states.
  std::printf("%-8s %7s %8s %8s %7s %7s %7s %7s %7s %7s %7s %6s %6s %7s %5s %7s %8s %7s\n", "phase",
              "conns_M", "wall_k/s", "cpu_k/s", "ins/c", "flt/kc", "cli_tbl", "cli_tw", "cli_tmr",
              "srv_tbl", "srv_syn", "slots", "rings", "srv_tmr", "echo", "tbl_cap", "heap_MB",
              "fail");
  std::vector<Sample> samples;
  auto t0 = std::chrono::steady_clock::now();
  double cpu0 = thread_cpu_seconds();
  uint64_t i0 = ins.read_value(), f0 = flt.read_value();
  uint64_t done = 0, mark = o.interval, last_done = 0;
  Phase phase = Phase::kBefore;
  Phase interval_phase = phase;  // the phase the interval started in
  const Instant start = p.now;
  auto completed = [&] {
    return ping.counters().rx_messages + (flood ? flood->counters().rx_messages : 0);
  };
  while (done < o.connections) {
    if (o.overload != 0 && phase == Phase::kBefore && done >= o.overload_at) {
      ws::ClientParams fp = cp;
      fp.connections = o.overload;
      flood = std::make_unique<ws::TcpPingService>("flood", fp, p.a);
      flood->start(dummy, p.now);
      phase = Phase::kOverload;
    } else if (phase == Phase::kOverload && done >= o.overload_at + o.overload_for) {
      flood->stop(p.now);  // aborts its connections, as a client process that exits
      phase = Phase::kAfter;
    }
    ping.poll(p.now);
    if (phase == Phase::kOverload) flood->poll(p.now);
    echo.poll(p.now);
    p.settle();
    p.a.poll(p.now);
    p.b.poll(p.now);
    p.settle();
    uint64_t now_done = completed();
    int64_t step = static_cast<int64_t>(now_done - done) * o.ns_per_connection;
    p.now += Duration::nanos(step > 1000 ? step : 1000);
    done = now_done;
    if (done < mark) continue;
    auto t1 = std::chrono::steady_clock::now();
    uint64_t i1 = ins.read_value(), f1 = flt.read_value();
    double n = static_cast<double>(done - last_done);
    double secs = std::chrono::duration<double>(t1 - t0).count();
    double cpu1 = thread_cpu_seconds();
    struct mallinfo2 mi = mallinfo2();
    Sample sm;
    sm.phase = interval_phase == phase ? phase : Phase::kOverload;  // a switch: overload
    sm.cpu_rate = n / (cpu1 - cpu0);
    sm.ins = static_cast<double>(i1 - i0) / n;
    sm.cli = p.a.table_sizes();
    sm.srv = p.b.table_sizes();
    sm.echo_states = echo.conn_states();
    const ws::tcp::TcpCounters ca = p.a.counters(), cb = p.b.counters();
    sm.srv_memory = cb.memory_bytes;
    samples.push_back(sm);
    std::printf("%-8s %7.2f %8.1f %8.1f %7.0f %7.2f %7zu %7" PRIu64 " %7zu %7zu %7" PRIu64
                " %6zu %6zu %7zu %5zu %7zu %8.1f %7" PRIu64 "\n",
                phase_name(sm.phase), static_cast<double>(done) / 1e6, n / secs / 1e3,
                sm.cpu_rate / 1e3, sm.ins, static_cast<double>(f1 - f0) / n * 1e3,
                sm.cli.connections, ca.state[static_cast<size_t>(ws::tcp::TcpState::kTimeWait)],
                sm.cli.timer_entries, sm.srv.connections,
                cb.state[static_cast<size_t>(ws::tcp::TcpState::kSynReceived)], sm.srv.slots,
                sm.srv.spare_rings, sm.srv.timer_entries, sm.echo_states, sm.srv.table_buckets,
                static_cast<double>(mi.arena) / 1e6, ca.connect_failed);
    std::fflush(stdout);
    t0 = t1;
    cpu0 = cpu1;
    i0 = i1, f0 = f1;
    last_done = done;
    mark += o.interval;
    interval_phase = phase;
  }
  std::printf("# virtual time %.1f s; CPU-time rate last/first interval: %.3f\n",
              (p.now - start).secs(), samples.back().cpu_rate / samples.front().cpu_rate);
  if (o.overload != 0) {
    // Before: every interval but the first (start-up); after: every interval after the
    // first one following the overload (the flood's aborts and the last retransmitted SYNs).
    std::vector<double> rb, ra, ib, ia;
    const Sample* lb = nullptr;
    const Sample* la = nullptr;
    bool skipped = false;
    for (size_t i = 0; i < samples.size(); ++i) {
      const Sample& s = samples[i];
      if (s.phase == Phase::kBefore && i > 0) {
        rb.push_back(s.cpu_rate), ib.push_back(s.ins), lb = &s;
      } else if (s.phase == Phase::kAfter) {
        if (!skipped) {
          skipped = true;
          continue;
        }
        ra.push_back(s.cpu_rate), ia.push_back(s.ins), la = &s;
      }
    }
    if (lb != nullptr && la != nullptr) {
      std::printf(
          "# after/before overload: CPU-time rate %.3f (%.1f vs %.1f k/s), "
          "instructions/connection %.3f (%.0f vs %.0f)\n",
          mean(ra) / mean(rb), mean(ra) / 1e3, mean(rb) / 1e3, mean(ia) / mean(ib), mean(ia),
          mean(ib));
      std::printf(
          "# server at the end of each phase: table %zu/%zu (capacity %zu/%zu), slots "
          "%zu/%zu, spare rings %zu/%zu, timer entries %zu/%zu (capacity %zu/%zu), echo "
          "states %zu/%zu, TCP memory %.2f/%.2f MB\n",
          lb->srv.connections, la->srv.connections, lb->srv.table_buckets, la->srv.table_buckets,
          lb->srv.slots, la->srv.slots, lb->srv.spare_rings, la->srv.spare_rings,
          lb->srv.timer_entries, la->srv.timer_entries, lb->srv.timer_capacity,
          la->srv.timer_capacity, lb->echo_states, la->echo_states,
          static_cast<double>(lb->srv_memory) / 1e6, static_cast<double>(la->srv_memory) / 1e6);
      std::printf(
          "# client at the end of each phase: table %zu/%zu (capacity %zu/%zu), slots "
          "%zu/%zu, timer entries %zu/%zu\n",
          lb->cli.connections, la->cli.connections, lb->cli.table_buckets, la->cli.table_buckets,
          lb->cli.slots, la->cli.slots, lb->cli.timer_entries, la->cli.timer_entries);
    }
  }
  ping.stop(p.now);
  if (flood) flood->stop(p.now);
  echo.stop(p.now);
  p.settle();
  p.a.shutdown_all(p.now);
  p.b.shutdown_all(p.now);
  return 0;
}
