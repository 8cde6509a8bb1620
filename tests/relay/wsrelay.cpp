// wsrelay: an L2 relay between two interfaces that impairs the frames it forwards, for
// measuring loss recovery where the kernel has no netem. Every frame that arrives on one
// interface leaves on the other after a delay; on the way it may be dropped, duplicated
// or held back (reordered), each decided by a seeded PRNG per direction, so a run with the
// same seed and the same input makes the same decisions. The queue is bounded in frames
// and the relay in run time. It prints its counters as one JSON line when it ends.
//
//   wsrelay --a IF --b IF [--loss PCT] [--delay-ms MS] [--reorder PCT] [--reorder-ms MS]
//           [--dup PCT] [--rate-mbit R] [--seed N] [--limit FRAMES] [--max-seconds S]
//
// Impairments apply to both directions alike. A reordered frame is held --reorder-ms
// (default: the delay, at least 1 ms) longer than the others, so the frames behind it
// overtake it. --rate-mbit serialises each direction at that rate (0: no limit).
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <queue>
#include <string>
#include <vector>

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// splitmix64: small, fast, and the same sequence on every machine for a seed.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  double uniform() {  // [0, 1)
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }
  bool chance(double pct) { return pct > 0 && uniform() * 100.0 < pct; }

 private:
  uint64_t s_;
};

struct Options {
  std::string a, b;
  double loss = 0, reorder = 0, dup = 0;  // percent
  double delay_ms = 0, reorder_ms = -1, rate_mbit = 0;
  uint64_t seed = 1;
  size_t limit = 20000;
  double max_seconds = 600;
};

struct Frame {
  uint64_t due;
  uint64_t order;  // arrival order: frames due at the same time leave in it
  std::vector<uint8_t> bytes;
  bool operator>(const Frame& o) const { return due != o.due ? due > o.due : order > o.order; }
};

struct Counters {
  uint64_t received = 0, forwarded = 0, dropped = 0, duplicated = 0, reordered = 0;
  uint64_t overflow = 0, send_errors = 0;
};

// One direction: frames read from `in` wait in `queue` until due, then leave on `out`.
struct Direction {
  const char* name;
  int in = -1, out = -1;
  Rng rng;
  uint64_t link_free = 0;  // --rate-mbit: when the previous frame has left
  std::priority_queue<Frame, std::vector<Frame>, std::greater<>> queue;
  Counters k;
};

bool parse_number(const char* s, double lo, double hi, double* out) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !(v >= lo && v <= hi)) return false;
  *out = v;
  return true;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "wsrelay: %s\n"
               "usage: wsrelay --a IF --b IF [--loss PCT] [--delay-ms MS] [--reorder PCT]\n"
               "               [--reorder-ms MS] [--dup PCT] [--rate-mbit R] [--seed N]\n"
               "               [--limit FRAMES] [--max-seconds S]\n",
               why);
  return 2;
}

// Returns 0, or the exit status of a usage error.
int parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i];
    if (i + 1 >= argc) return usage(("missing value for " + f).c_str());
    const char* v = argv[++i];
    double d = 0;
    bool ok = true;
    if (f == "--a") {
      o.a = v;
    } else if (f == "--b") {
      o.b = v;
    } else if (f == "--loss") {
      ok = parse_number(v, 0, 100, &o.loss);
    } else if (f == "--reorder") {
      ok = parse_number(v, 0, 100, &o.reorder);
    } else if (f == "--dup") {
      ok = parse_number(v, 0, 100, &o.dup);
    } else if (f == "--delay-ms") {
      ok = parse_number(v, 0, 10000, &o.delay_ms);
    } else if (f == "--reorder-ms") {
      ok = parse_number(v, 0, 10000, &o.reorder_ms);
    } else if (f == "--rate-mbit") {
      ok = parse_number(v, 0, 100000, &o.rate_mbit);
    } else if (f == "--seed") {
      ok = parse_number(v, 0, 9007199254740992.0, &d);
      o.seed = static_cast<uint64_t>(d);
    } else if (f == "--limit") {
      ok = parse_number(v, 1, 1000000, &d);
      o.limit = static_cast<size_t>(d);
    } else if (f == "--max-seconds") {
      ok = parse_number(v, 0.1, 86400, &o.max_seconds);
    } else {
      return usage(("unknown flag " + f).c_str());
    }
    if (!ok) return usage(("bad value for " + f + ": " + v).c_str());
  }
  if (o.a.empty() || o.b.empty()) return usage("--a and --b are required");
  if (o.a == o.b) return usage("--a and --b must differ");
  if (o.reorder_ms < 0) o.reorder_ms = o.delay_ms < 1 ? 1 : o.delay_ms;
  return 0;
}

// A raw socket bound to `ifname` that sees every frame arriving there (promiscuous), but
// not the frames this relay sends out of it.
int open_port(const std::string& ifname) {
  const unsigned idx = if_nametoindex(ifname.c_str());
  if (idx == 0) {
    std::fprintf(stderr, "wsrelay: no interface %s\n", ifname.c_str());
    return -1;
  }
  int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
  if (fd < 0) {
    std::perror("wsrelay: socket(AF_PACKET)");
    return -1;
  }
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_ALL);
  sll.sll_ifindex = static_cast<int>(idx);
  int one = 1;
  int buf = 8 << 20;
  packet_mreq mr{};
  mr.mr_ifindex = static_cast<int>(idx);
  mr.mr_type = PACKET_MR_PROMISC;
  if (bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0 ||
      setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) != 0 ||
      setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr) != 0) {
    std::fprintf(stderr, "wsrelay: %s: %s\n", ifname.c_str(), std::strerror(errno));
    close(fd);
    return -1;
  }
  // Best effort: a deep buffer absorbs bursts while frames wait (needs CAP_NET_ADMIN).
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  }
  return fd;
}

// Reads what has arrived (a bounded batch) and queues it with its fate decided.
void take(Direction& d, const Options& o, uint64_t& order) {
  uint8_t buf[65536];
  for (int n = 0; n < 256; ++n) {
    const ssize_t r = recv(d.in, buf, sizeof buf, 0);
    if (r <= 0) return;  // EAGAIN, or an error poll() reports again
    const uint64_t now = now_ns();
    ++d.k.received;
    if (d.rng.chance(o.loss)) {
      ++d.k.dropped;
      continue;
    }
    const int copies = d.rng.chance(o.dup) ? 2 : 1;
    d.k.duplicated += static_cast<uint64_t>(copies - 1);
    for (int c = 0; c < copies; ++c) {
      if (d.queue.size() >= o.limit) {
        ++d.k.overflow;
        continue;
      }
      uint64_t due = now + static_cast<uint64_t>(o.delay_ms * 1e6);
      if (o.rate_mbit > 0) {
        // Serialisation at the bottleneck: the frame leaves after the one before it.
        if (due < d.link_free) due = d.link_free;
        d.link_free = due + static_cast<uint64_t>(static_cast<double>(r) * 8e3 / o.rate_mbit);
      }
      if (d.rng.chance(o.reorder)) {
        ++d.k.reordered;
        due += static_cast<uint64_t>(o.reorder_ms * 1e6);
      }
      d.queue.push(Frame{due, order++, std::vector<uint8_t>(buf, buf + r)});
    }
  }
}

// Sends every frame that is due; returns when the next one is (UINT64_MAX: none queued).
uint64_t release(Direction& d) {
  const uint64_t now = now_ns();
  while (!d.queue.empty() && d.queue.top().due <= now) {
    const Frame& f = d.queue.top();
    if (send(d.out, f.bytes.data(), f.bytes.size(), 0) == static_cast<ssize_t>(f.bytes.size())) {
      ++d.k.forwarded;
    } else {
      ++d.k.send_errors;
    }
    d.queue.pop();
  }
  return d.queue.empty() ? UINT64_MAX : d.queue.top().due;
}

void print_counters(const Direction* dirs) {
  std::printf("{");
  for (int i = 0; i < 2; ++i) {
    const Counters& k = dirs[i].k;
    std::printf(
        "%s\"%s\": {\"received\": %llu, \"forwarded\": %llu, \"dropped\": %llu, "
        "\"duplicated\": %llu, \"reordered\": %llu, \"overflow\": %llu, \"send_errors\": %llu}",
        i ? ", " : "", dirs[i].name, static_cast<unsigned long long>(k.received),
        static_cast<unsigned long long>(k.forwarded), static_cast<unsigned long long>(k.dropped),
        static_cast<unsigned long long>(k.duplicated), static_cast<unsigned long long>(k.reordered),
        static_cast<unsigned long long>(k.overflow),
        static_cast<unsigned long long>(k.send_errors));
  }
  std::printf("}\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = parse(argc, argv, o); rc != 0) return rc;
  const int fa = open_port(o.a);
  const int fb = fa < 0 ? -1 : open_port(o.b);
  if (fa < 0 || fb < 0) return 1;
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  // Two PRNG streams, so one direction's traffic does not shift the other's decisions.
  Direction dirs[2] = {{"a_to_b", fa, fb, Rng(o.seed * 2 + 1), 0, {}, {}},
                       {"b_to_a", fb, fa, Rng(o.seed * 2 + 2), 0, {}, {}}};
  std::fprintf(stderr, "wsrelay: relaying %s <-> %s\n", o.a.c_str(), o.b.c_str());
  const uint64_t end = now_ns() + static_cast<uint64_t>(o.max_seconds * 1e9);
  uint64_t order = 0;
  while (g_stop == 0 && now_ns() < end) {
    const uint64_t next = std::min(release(dirs[0]), release(dirs[1]));
    const uint64_t now = now_ns();
    uint64_t wait = std::min(next, end) > now ? std::min(next, end) - now : 0;
    if (wait > 100000000ull) wait = 100000000ull;  // look at g_stop at least every 100 ms
    timespec ts{static_cast<time_t>(wait / 1000000000ull), static_cast<long>(wait % 1000000000ull)};
    pollfd p[2] = {{fa, POLLIN, 0}, {fb, POLLIN, 0}};
    const int n = ppoll(p, 2, &ts, nullptr);
    if (n < 0 && errno != EINTR) {
      std::perror("wsrelay: ppoll");
      break;
    }
    if (n > 0 && (p[0].revents & POLLIN) != 0) take(dirs[0], o, order);
    if (n > 0 && (p[1].revents & POLLIN) != 0) take(dirs[1], o, order);
  }
  print_counters(dirs);
  close(fa);
  close(fb);
  return 0;
}
