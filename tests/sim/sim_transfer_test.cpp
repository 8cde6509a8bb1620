// Bulk transfers in both directions through faulty links; every byte is checked.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "stack/tcp/mss.hpp"
#include "tests/sim/apps.hpp"

namespace ws::sim {
namespace {

struct Mix {
  const char* name;
  LinkParams link;
  uint64_t bytes;
  tcp::CongestionAlgo cc = tcp::CongestionAlgo::kCubic;
  bool sack = true;
  bool timestamps = true;
  bool wscale = true;
  uint32_t mtu = 1500;
  double chain = 0;      // share of segments delivered as buffer chains
  bool partial = false;  // receivers consume about half of each offer
  double hold = 0;       // share of segments delivered through a buffer owner
  double squeeze = 0;    // share of those when the owner is low (refuses, takes back)
};

LinkParams lp(double loss, double reorder, double dup, double corrupt, int delay_ms = 5) {
  LinkParams p;
  p.loss = loss;
  p.reorder = reorder;
  p.dup = dup;
  p.corrupt = corrupt;
  p.delay = Duration::millis(delay_ms);
  return p;
}

const Mix kMixes[] = {
    {"clean", lp(0, 0, 0, 0), 20'000'000},
    {"loss1", lp(0.01, 0, 0, 0), 10'000'000},
    {"loss5", lp(0.05, 0, 0, 0), 4'000'000},
    {"reorder25", lp(0, 0.25, 0, 0), 10'000'000},
    {"dup5", lp(0, 0, 0.05, 0), 10'000'000},
    {"corrupt", lp(0, 0, 0, 0.001), 10'000'000},
    {"delay10", lp(0, 0, 0, 0, 10), 10'000'000},
    {"mixed", lp(0.01, 0.1, 0.02, 0.001), 5'000'000},
    {"newreno_nosack_loss1", lp(0.01, 0, 0, 0), 5'000'000, tcp::CongestionAlgo::kNewReno, false},
    {"nots_nows_mixed", lp(0.01, 0.1, 0.02, 0), 3'000'000, tcp::CongestionAlgo::kCubic, true, false,
     false},
    {"jumbo9000_loss1", lp(0.01, 0.05, 0, 0), 10'000'000, tcp::CongestionAlgo::kCubic, true, true,
     true, 9000},
    // Segments received as chains (headers cut anywhere) and readers that leave
    // bytes behind: the in-place and the buffered receive paths, every byte checked.
    {"chained_clean", lp(0, 0, 0, 0), 10'000'000, tcp::CongestionAlgo::kCubic, true, true, true,
     1500, 1.0},
    {"chained_mixed", lp(0.01, 0.1, 0.02, 0.001), 5'000'000, tcp::CongestionAlgo::kCubic, true,
     true, true, 1500, 0.5},
    {"jumbo9000_chained", lp(0.01, 0.05, 0, 0), 10'000'000, tcp::CongestionAlgo::kCubic, true, true,
     true, 9000, 1.0},
    {"partial_reader_mixed", lp(0.01, 0.1, 0.02, 0.001), 3'000'000, tcp::CongestionAlgo::kCubic,
     true, true, true, 1500, 0.5, true},
    // Unread bytes kept in the received buffers instead of copied (rx_held.hpp),
    // mixed with copies (refused holds, out-of-order data) and with the owner taking
    // its buffers back at random moments: every byte checked, every buffer returned.
    {"held_partial_clean", lp(0, 0, 0, 0), 5'000'000, tcp::CongestionAlgo::kCubic, true, true, true,
     1500, 0, true, 1.0},
    {"held_partial_mixed", lp(0.01, 0.1, 0.02, 0.001), 3'000'000, tcp::CongestionAlgo::kCubic, true,
     true, true, 1500, 0.5, true, 0.9, 0.02},
    {"held_chained_squeezed", lp(0.01, 0.05, 0, 0), 4'000'000, tcp::CongestionAlgo::kCubic, true,
     true, true, 1500, 1.0, true, 1.0, 0.05},
};

class Transfer : public ::testing::TestWithParam<std::tuple<int, uint64_t>> {};

TEST_P(Transfer, EveryByteBothWays) {
  const Mix& m = kMixes[std::get<0>(GetParam())];
  uint64_t seed = std::get<1>(GetParam());
  auto ca = default_config(1), cb = default_config(2);
  for (auto* c : {&ca, &cb}) {
    c->congestion = m.cc;
    c->sack = m.sack;
    c->timestamps = m.timestamps;
    c->window_scaling = m.wscale;
  }
  Net n(m.link, m.link, seed, ca, cb);
  n.out_a.mtu = n.out_b.mtu = m.mtu;
  n.chain = m.chain;
  n.hold = m.hold;
  n.squeeze = m.squeeze;
  // Every segment on the wire is well formed and fits the MTU and the MSS (what tshark
  // would check in a capture).
  uint64_t malformed = 0, oversized = 0, segments = 0;
  auto check = [&](Packet& pk) {
    ++segments;
    auto v = wire::TcpView::parse(pk.l4);
    wire::TcpOptions o;
    if (!v || !v->parse_options(o)) {
      ++malformed;
      return true;
    }
    uint32_t opt = static_cast<uint32_t>(v->header_len() - 20);
    if (pk.l4.size() + 20 > m.mtu || v->payload().size() + opt > m.mtu - 40) ++oversized;
    if (!v->syn() &&
        v->payload().size() > tcp::effective_send_mss(m.mtu - 40, m.mtu - 40, m.timestamps))
      ++oversized;
    return true;
  };
  n.tap_ab = check;
  n.tap_ba = check;
  Pair p;
  p.client.partial = p.server.partial = m.partial;
  p.start(n, m.bytes, m.bytes / 2, seed);
  bool done =
      n.run_until([&] { return p.client.closed && p.server.closed; }, Duration::seconds(600));
  SCOPED_TRACE(std::string(m.name) + " seed " + std::to_string(seed));
  EXPECT_TRUE(done) << "client rx " << p.client.received << " server rx " << p.server.received
                    << " at " << n.now.ns() / 1e9 << "s";
  EXPECT_EQ(p.server.received, m.bytes);
  EXPECT_EQ(p.client.received, m.bytes / 2);
  EXPECT_EQ(p.server.bad_bytes, 0u);
  EXPECT_EQ(p.client.bad_bytes, 0u);
  EXPECT_EQ(p.client.reason, tcp::CloseReason::kNormal);
  EXPECT_EQ(p.server.reason, tcp::CloseReason::kNormal);
  EXPECT_GT(segments, 0u);
  EXPECT_EQ(malformed, 0u);
  EXPECT_EQ(oversized, 0u);
  uint64_t bad_csum =
      n.drops_a.get(DropReason::kTcpBadChecksum) + n.drops_b.get(DropReason::kTcpBadChecksum);
  EXPECT_EQ(bad_csum, n.link_ab.corrupted + n.link_ba.corrupted);
  // Time to finish: bounded and deterministic (printed for the record).
  auto ca_ = n.a.counters(), cb_ = n.b.counters();
  // Which receive path carried the bytes: a reader that takes everything gets
  // in-order data straight from the segments; one that leaves half behind, or
  // out-of-order data, goes through the ring.
  uint64_t direct = ca_.rx_bytes_direct + cb_.rx_bytes_direct;
  uint64_t buffered = ca_.rx_bytes_buffered + cb_.rx_bytes_buffered;
  EXPECT_GT(direct, 0u);
  if (m.partial) {
    EXPECT_GT(buffered, direct / 4);
  }
  if (m.hold > 0) {
    // Held bytes were read from the owner's buffers, and every buffer went back.
    EXPECT_GT(ca_.rx_bytes_held + cb_.rx_bytes_held, 0u);
    EXPECT_EQ(n.owner.held(), 0u) << "buffers still held after both ends closed";
    EXPECT_EQ(n.owner.retained, n.owner.released);
    EXPECT_EQ(n.owner.bad_releases, 0u);
    EXPECT_EQ(ca_.rx_held_pieces + cb_.rx_held_pieces, 0u);
    if (m.squeeze > 0) {
      EXPECT_GT(n.owner.given_back, 0u);
      EXPECT_GT(ca_.rx_held_compacted + cb_.rx_held_compacted, 0u);
    }
    std::printf("[%s seed %llu] held %llu bytes, %llu of them later copied into the ring\n", m.name,
                static_cast<unsigned long long>(seed),
                static_cast<unsigned long long>(ca_.rx_bytes_held + cb_.rx_bytes_held),
                static_cast<unsigned long long>(ca_.rx_held_compacted + cb_.rx_held_compacted));
  }
  if (m.chain > 0) {
    EXPECT_GT(n.chained, 0u);
    EXPECT_GT(ca_.rx_header_pullups + cb_.rx_header_pullups, 0u);
  }
  std::printf("[%s seed %llu] received in place %llu, buffered %llu\n", m.name,
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(direct),
              static_cast<unsigned long long>(buffered));
  std::printf("[%s seed %llu] %.2fs virtual, rexmit a=%llu b=%llu fast=%llu rto=%llu\n", m.name,
              static_cast<unsigned long long>(seed), (n.now.ns() - 1e9) / 1e9,
              static_cast<unsigned long long>(ca_.retransmits),
              static_cast<unsigned long long>(cb_.retransmits),
              static_cast<unsigned long long>(ca_.fast_retransmits + cb_.fast_retransmits),
              static_cast<unsigned long long>(ca_.rto_fired + cb_.rto_fired));
}

// The seeds RandomMixes runs: 1 to 50, or WS_SIM_MIX_SEEDS=FIRST-LAST for a longer soak
// (docs/testing.md). A malformed range fails the test rather than running the default.
struct SeedRange {
  uint64_t first = 1, last = 50;
};
SeedRange mix_seeds() {
  SeedRange r;
  const char* env = std::getenv("WS_SIM_MIX_SEEDS");
  if (env == nullptr) return r;
  unsigned long long a = 0, b = 0;
  char tail = 0;
  if (std::sscanf(env, "%llu-%llu%c", &a, &b, &tail) != 2 || a == 0 || b < a) {
    ADD_FAILURE() << "WS_SIM_MIX_SEEDS='" << env << "': expected FIRST-LAST, 1 <= FIRST <= LAST";
    return {1, 0};
  }
  return {a, b};
}

// Random link faults, options, congestion control, buffer sizes and MTUs per seed.
TEST(RandomMixes, EveryByteForFiftySeeds) {
  const SeedRange range = mix_seeds();
  for (uint64_t seed = range.first; seed <= range.last; ++seed) {
    Rng r(seed * 977);
    LinkParams p;
    p.loss = r.uniform() * 0.08;
    p.reorder = r.uniform() * 0.3;
    p.dup = r.uniform() * 0.05;
    p.corrupt = r.uniform() * 0.01;
    p.delay = Duration::micros(100 + static_cast<int64_t>(r.next() % 20000));
    p.rate_bytes_per_sec = 1e6 + r.uniform() * 200e6;
    auto ca = default_config(1), cb = default_config(2);
    for (auto* c : {&ca, &cb}) {
      c->sack = r.chance(0.7);
      c->timestamps = r.chance(0.7);
      c->window_scaling = r.chance(0.8);
      c->congestion = r.chance(0.5) ? tcp::CongestionAlgo::kCubic : tcp::CongestionAlgo::kNewReno;
      if (r.chance(0.2)) c->recv_buffer = 8192 + static_cast<uint32_t>(r.next() % 200000);
      if (r.chance(0.2)) c->send_buffer = 4096 + static_cast<uint32_t>(r.next() % 200000);
    }
    Net n(p, p, seed, ca, cb);
    uint32_t mtu = r.chance(0.3) ? 9000 : (r.chance(0.3) ? 576 : 1500);
    n.out_a.mtu = n.out_b.mtu = mtu;
    Pair pr;
    uint64_t a = r.next() % 3'000'000, b = r.next() % 2'000'000;
    pr.start(n, a, b, seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    ASSERT_TRUE(
        n.run_until([&] { return pr.client.closed && pr.server.closed; }, Duration::seconds(3000)));
    EXPECT_EQ(pr.server.received, a);
    EXPECT_EQ(pr.client.received, b);
    EXPECT_EQ(pr.client.bad_bytes + pr.server.bad_bytes, 0u);
    EXPECT_EQ(pr.client.reason, tcp::CloseReason::kNormal);
    EXPECT_EQ(pr.server.reason, tcp::CloseReason::kNormal);
  }
}

INSTANTIATE_TEST_SUITE_P(Mixes, Transfer,
                         ::testing::Combine(::testing::Range(0,
                                                             static_cast<int>(std::size(kMixes))),
                                            ::testing::Values(1u, 2u)),
                         [](const auto& info) {
                           return std::string(kMixes[std::get<0>(info.param)].name) + "_seed" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace ws::sim
