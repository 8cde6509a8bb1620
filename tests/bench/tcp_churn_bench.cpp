// Connection churn through the real TCP engine and the real services, in one process: a
// `ping` client with `reconnect: true` (TcpPingService) against the length32 `echo`
// (TcpEchoService), two TcpStacks back to back (tests/support/tcp_pair.hpp) on a virtual clock
// that advances a fixed time per completed connection, so that TIME_WAIT populations, timer
// horizons and port reuse look like a real run at that rate. Every interval it prints the
// rate over wall-clock and over this thread's CPU time (the latter is what to compare on a
// shared machine), CPU counters per connection (instructions, cycles, page faults: from
// perf_event_open when the kernel allows it) and the sizes that could grow (tables, timer
// queues, malloc heap), so a decline over time shows without memif or scheduler noise.
//   build/tests/bench/tcp_churn_bench [--connections N] [--interval N] [--in-flight N]
//                                     [--ns-per-connection NS]
// Defaults: 20 M connections, 1 M per interval, 64 in flight, 4000 ns (250 k/s virtual).
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
    } else {
      return false;
    }
  }
  return o.interval <= o.connections;
}

// As the stability benchmark configures both processes (tests/bench/bench_services.py).
ws::tcp::TcpConfig churn_config(uint8_t key) {
  ws::tcp::TcpConfig c = ws::test::bench_config(key);
  c.time_wait = Duration::millis(1000);
  c.time_wait_reuse = Duration::millis(5);
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: %s [--connections N] [--interval N] [--in-flight N] "
                 "[--ns-per-connection NS]\n",
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
  PerfCounter ins(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
  PerfCounter cyc(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
  PerfCounter flt(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS);
  std::printf("# %" PRIu64 " connections, %u in flight, virtual %.0f connections/s%s\n",
              o.connections, o.in_flight, 1e9 / static_cast<double>(o.ns_per_connection),
              ins.ok() ? "" : " (no perf counters: instructions/cycles shown as 0)");
  std::printf("%9s %9s %9s %8s %8s %8s %7s %7s %7s %8s %8s %9s %9s\n", "conns_M", "wall_k/s",
              "cpu_k/s", "ins/c", "cyc/c", "flt/kc", "cli_tbl", "cli_tmr", "srv_tmr", "srv_tbl",
              "heap_MB", "heap_free", "fail");
  std::vector<double> rates;
  auto t0 = std::chrono::steady_clock::now();
  double cpu0 = thread_cpu_seconds();
  uint64_t i0 = ins.read_value(), c0 = cyc.read_value(), f0 = flt.read_value();
  uint64_t done = 0, mark = o.interval, last_done = 0;
  const Instant start = p.now;
  while (done < o.connections) {
    ping.poll(p.now);
    echo.poll(p.now);
    p.settle();
    p.a.poll(p.now);
    p.b.poll(p.now);
    p.settle();
    uint64_t now_done = ping.counters().rx_messages;
    int64_t step = static_cast<int64_t>(now_done - done) * o.ns_per_connection;
    p.now += Duration::nanos(step > 1000 ? step : 1000);
    done = now_done;
    if (done < mark) continue;
    auto t1 = std::chrono::steady_clock::now();
    uint64_t i1 = ins.read_value(), c1 = cyc.read_value(), f1 = flt.read_value();
    double n = static_cast<double>(done - last_done);
    double secs = std::chrono::duration<double>(t1 - t0).count();
    double cpu1 = thread_cpu_seconds();
    struct mallinfo2 mi = mallinfo2();
    ws::tcp::TcpTableSizes ca = p.a.table_sizes(), sb = p.b.table_sizes();
    rates.push_back(n / (cpu1 - cpu0));
    std::printf("%9.1f %9.1f %9.1f %8.0f %8.0f %8.2f %7zu %7zu %7zu %8zu %8.1f %9zu %9" PRIu64 "\n",
                static_cast<double>(done) / 1e6, n / secs / 1e3, n / (cpu1 - cpu0) / 1e3,
                static_cast<double>(i1 - i0) / n, static_cast<double>(c1 - c0) / n,
                static_cast<double>(f1 - f0) / n * 1e3, ca.connections, ca.timer_entries,
                sb.timer_entries, sb.connections, static_cast<double>(mi.arena) / 1e6,
                static_cast<size_t>(mi.ordblks), p.a.counters().connect_failed);
    std::fflush(stdout);
    t0 = t1;
    cpu0 = cpu1;
    i0 = i1, c0 = c1, f0 = f1;
    last_done = done;
    mark += o.interval;
  }
  std::printf("# virtual time %.1f s; CPU-time rate last/first interval: %.3f\n",
              (p.now - start).secs(), rates.back() / rates.front());
  ping.stop(p.now);
  echo.stop(p.now);
  p.settle();
  p.a.shutdown_all(p.now);
  p.b.shutdown_all(p.now);
  return 0;
}
