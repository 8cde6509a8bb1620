// Loss recovery on a virtual clock: the impairment matrix (loss 0.1/1/5/10 %, one-way
// delay 1/20 ms, reordering 0/10/25 %, every fault in both directions) against the stack
// itself. Stack A sends `bytes` to stack B over the simulator's link (1 Gbit/s, 20 ms
// drop-tail queue); a reordered segment is held back by up to 3 ms. Every byte is checked.
//
// For each cell it prints one Markdown table row: transfer time (virtual, from connect to
// the last byte received), goodput, and per transfer (mean over the seeds) the sender's
// retransmission timeouts, recoveries by kind and retransmitted segments. A cell that
// does not finish within `limit` virtual seconds is marked "stall". Exit 1 if any byte
// is wrong or any transfer stalled.
//   build/tests/bench/recovery_matrix [--seeds N] [--bytes B] [--quick] [--limit S]
// --quick runs a bounded subset (1 % and 10 % loss, 20 ms, reordering 0 and 25 %);
// --cell LOSS% DELAY_MS REORDER% runs one cell.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stack/tcp/tcb.hpp"
#include "tests/sim/apps.hpp"

namespace ws {
namespace {

struct Cell {
  double loss;
  int delay_ms;
  double reorder;
};

struct Totals {
  double secs = 0;
  uint64_t rto = 0, fast = 0, rack = 0, tlp = 0, spurious = 0, rexmit = 0;
  int runs = 0, stalls = 0;
  uint64_t bad = 0;
};

// What a stalled sender is waiting for, on stderr.
void dump_state(const tcp::Tcb& c, Instant now) {
  auto rel = [&](Instant t) { return t.is_never() ? -1.0 : (t - now).secs(); };
  std::fprintf(stderr,
               "stall: state %d una %u nxt %u max %u end %u wnd %u cwnd %u ssthresh %u pipe %u "
               "rec %d rto_rec %d log %zu sacked %u lost %u rto %.3f rto_at %+.3f reo_at %+.3f "
               "tlp_at %+.3f tlp_out %d retries %u\n",
               static_cast<int>(c.state), c.snd_una.raw(), c.snd_nxt.raw(), c.snd_max.raw(),
               c.data_end().raw(), c.snd_wnd, c.cc->cwnd(), c.cc->ssthresh(), c.pipe(),
               c.in_recovery, c.rto_recovery, c.txlog.size(), c.txlog.sacked_bytes(),
               c.txlog.lost_bytes(), c.rto.secs(), rel(c.rto_at), rel(c.rack.reo_at), rel(c.tlp_at),
               c.tlp_out, c.retries);
  for (size_t i = 0; i < c.txlog.size() && i < 12; ++i)
    std::fprintf(stderr, "  [%u +%u] flags %u sent %+.3f\n", c.txlog[i].seq.raw(), c.txlog[i].len,
                 c.txlog[i].flags, rel(c.txlog[i].xmit));
}

void run_one(const Cell& c, uint64_t seed, uint64_t bytes, int64_t limit_s, Totals& t) {
  sim::LinkParams p;
  p.loss = c.loss;
  p.reorder = c.reorder;
  p.delay = Duration::millis(c.delay_ms);
  auto n = std::make_unique<sim::Net>(p, p, seed);
  auto pr = std::make_unique<sim::Pair>();
  const Instant t0 = n->now;
  pr->start(*n, bytes, 0, seed);
  bool done =
      n->run_until([&] { return pr->server.received == bytes; }, Duration::seconds(limit_s));
  if (!done && pr->client.c != nullptr) dump_state(*static_cast<tcp::Tcb*>(pr->client.c), n->now);
  const tcp::TcpCounters a = n->a.counters();
  ++t.runs;
  if (!done) ++t.stalls;
  t.secs += (n->now - t0).secs();
  t.bad += pr->server.bad_bytes;
  t.rto += a.rto_fired;
  auto kind = [&](tcp::RecoveryKind k) { return a.recovery[static_cast<size_t>(k)]; };
  t.fast += kind(tcp::RecoveryKind::kFast);
  t.rack += kind(tcp::RecoveryKind::kRack);
  t.tlp += kind(tcp::RecoveryKind::kTlp);
  t.spurious += kind(tcp::RecoveryKind::kSpurious);
  t.rexmit += a.retransmits;
}

double per_run(uint64_t v, int runs) { return static_cast<double>(v) / runs; }

}  // namespace
}  // namespace ws

int main(int argc, char** argv) {
  using namespace ws;
  int seeds = 3;
  uint64_t bytes = 4u << 20;
  int64_t limit = 600;
  bool quick = false;
  std::optional<Cell> only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--cell") && i + 3 < argc) {
      only =
          Cell{std::atof(argv[i + 1]) / 100, std::atoi(argv[i + 2]), std::atof(argv[i + 3]) / 100};
      i += 3;
    } else if (!std::strcmp(argv[i], "--seeds") && i + 1 < argc) {
      seeds = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--bytes") && i + 1 < argc) {
      bytes = std::strtoull(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--limit") && i + 1 < argc) {
      limit = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: recovery_matrix [--seeds N] [--bytes B] [--quick] [--limit S] "
                   "[--cell LOSS%% DELAY_MS REORDER%%]\n");
      return 2;
    }
  }
  if (seeds < 1 || seeds > 100 || bytes == 0 || bytes > (1ull << 32) || limit < 1) {
    std::fprintf(stderr, "recovery_matrix: seeds 1..100, bytes 1..4 GiB, limit >= 1 s\n");
    return 2;
  }
  std::vector<Cell> cells;
  for (double loss : {0.001, 0.01, 0.05, 0.10})
    for (int delay : {1, 20})
      for (double reorder : {0.0, 0.10, 0.25}) {
        if (quick && (loss == 0.001 || loss == 0.05 || delay == 1 || reorder == 0.10)) continue;
        cells.push_back({loss, delay, reorder});
      }
  if (only) cells = {*only};
  std::printf("%" PRIu64 " bytes A->B, %d seeds per cell; per transfer (mean over seeds)\n\n",
              bytes, seeds);
  std::printf(
      "| loss | delay | reorder | time s | goodput Mbit/s | RTO | fast | rack | tlp | spurious "
      "| rexmit |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  bool ok = true;
  for (const Cell& c : cells) {
    Totals t;
    for (int s = 1; s <= seeds; ++s) run_one(c, static_cast<uint64_t>(s), bytes, limit, t);
    const double secs = t.secs / t.runs;
    std::printf(
        "| %.1f%% | %d ms | %.0f%% | %.2f%s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f |\n",
        c.loss * 100, c.delay_ms, c.reorder * 100, secs, t.stalls ? " stall" : "",
        static_cast<double>(bytes) * 8 / secs / 1e6, per_run(t.rto, t.runs),
        per_run(t.fast, t.runs), per_run(t.rack, t.runs), per_run(t.tlp, t.runs),
        per_run(t.spurious, t.runs), per_run(t.rexmit, t.runs));
    std::fflush(stdout);
    if (t.stalls || t.bad) ok = false;
  }
  return ok ? 0 : 1;
}
