// Mixed-MTU paths: two stacks on MTU 9000 links through a router whose next hop is
// smaller; it drops larger datagrams and answers with ICMP "fragmentation needed", or
// (a filtering path) silently. Transfers in both directions with every byte checked:
// ICMP, black-hole detection and probing must find a working size and lose nothing.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/sim/apps.hpp"
#include "tests/sim/router.hpp"

namespace ws::sim {
namespace {

struct Case {
  const char* name;
  uint32_t path_mtu;
  bool icmp;
  double loss = 0;
  bool sack = true;
  uint32_t recovery_s = 600;
  double rate = 125e6;  // link bytes per second
};

const Case kCases[] = {
    {"icmp1500", 1500, true},
    {"blackhole1500", 1500, false},
    {"icmp4000", 4000, true},
    {"blackhole4000", 4000, false},
    {"blackhole1280", 1280, false},
    // Slow (about 47 s of virtual time): four backed-off timeouts, two per black-hole
    // step 8960 -> 1160 -> 536, and the server's RTO starts at 3 s because its SYN-ACK
    // had to be resent (RFC 6298 5.7) while the client's first segments were lost.
    {"blackhole576", 576, false},
    {"icmp576", 576, true},
    {"blackhole1500_nosack", 1500, false, 0, false},
    {"blackhole1500_loss", 1500, false, 0.005},
    {"icmp1500_loss", 1500, true, 0.005},
    // 10 Mbit/s, recovery every second: the MSS goes up and down during the transfer.
    {"icmp_recovery", 1500, true, 0, true, 1, 1.25e6},
    {"blackhole_recovery", 2000, false, 0, true, 1, 1.25e6},
};

class MixedMtu : public ::testing::TestWithParam<int> {};

TEST_P(MixedMtu, EveryByteBothWays) {
  const Case& k = kCases[GetParam()];
  SCOPED_TRACE(k.name);
  LinkParams lp;
  lp.loss = k.loss;
  lp.rate_bytes_per_sec = k.rate;
  lp.max_queue = Duration::millis(200);
  auto ca = default_config(1), cb = default_config(2);
  for (auto* c : {&ca, &cb}) {
    c->sack = k.sack;
    c->congestion = k.sack ? tcp::CongestionAlgo::kCubic : tcp::CongestionAlgo::kNewReno;
    c->pmtu_recovery = Duration::seconds(k.recovery_s);
    // On the 10 Mbit/s links, buffers sized to the path (its BDP plus the 200 ms queue):
    // a window far beyond it only overflows the queue, and probes wait out each recovery.
    if (k.rate < 1e7) c->buffer_max = 512 * 1024;
  }
  Net n(lp, lp, 11, ca, cb);
  n.out_a.mtu = n.out_b.mtu = 9000;
  MtuRouter r(n, k.path_mtu, k.icmp);
  Pair p;
  const uint64_t a_to_b = k.rate < 1e7 ? 6'000'000 : 4'000'000;
  p.start(n, a_to_b, a_to_b / 2, 11);
  bool done =
      r.run_until([&] { return p.client.closed && p.server.closed; }, Duration::seconds(300));
  EXPECT_TRUE(done) << "client rx " << p.client.received << " server rx " << p.server.received;
  EXPECT_EQ(p.server.received, a_to_b);
  EXPECT_EQ(p.client.received, a_to_b / 2);
  EXPECT_EQ(p.server.bad_bytes + p.client.bad_bytes, 0u);
  EXPECT_EQ(p.client.reason, tcp::CloseReason::kNormal);
  EXPECT_EQ(p.server.reason, tcp::CloseReason::kNormal);
  EXPECT_LE(r.largest, k.path_mtu);
  EXPECT_GT(r.dropped, 0u);  // the path really was narrower than the links
  auto ca_ = n.a.counters(), cb_ = n.b.counters();
  for (const auto& c : {ca_, cb_}) {
    EXPECT_GE(c.pmtu_reductions, 1u);
    if (k.icmp) {
      EXPECT_EQ(c.pmtu_black_holes, 0u);
    } else {
      EXPECT_GE(c.pmtu_black_holes, 1u);
      EXPECT_EQ(c.icmp_accepted, 0u);
    }
    if (k.recovery_s < 10 && k.icmp) {
      EXPECT_GE(c.pmtu_increases, 1u);
      EXPECT_GE(c.pmtu_reductions, 2u);  // tried the original size, lowered again
    } else if (k.recovery_s < 10) {
      // The search starts over after each recovery interval: more probes than one
      // binary search over 1160..8960 needs (at most 9).
      EXPECT_GE(c.pmtu_probes_sent, 10u);
      EXPECT_GE(c.pmtu_increases, 1u);
    }
  }
  std::printf(
      "[%s] %.2fs virtual; a: red=%llu inc=%llu bh=%llu probes=%llu/%llu ok/%llu failed "
      "rexmit=%llu; router dropped=%llu icmp=%llu\n",
      k.name, (n.now.ns() - 1e9) / 1e9, static_cast<unsigned long long>(ca_.pmtu_reductions),
      static_cast<unsigned long long>(ca_.pmtu_increases),
      static_cast<unsigned long long>(ca_.pmtu_black_holes),
      static_cast<unsigned long long>(ca_.pmtu_probes_sent),
      static_cast<unsigned long long>(ca_.pmtu_probes_succeeded),
      static_cast<unsigned long long>(ca_.pmtu_probes_failed),
      static_cast<unsigned long long>(ca_.retransmits), static_cast<unsigned long long>(r.dropped),
      static_cast<unsigned long long>(r.icmp_sent));
}

// A path that carries full-sized segments goes dark for a second in the middle of a
// transfer: two timeouts in a row, and black-hole detection cannot tell that from a
// path dropping large packets. It falls back to BASE_PLPMTU; the search then probes
// the link's size first (a timeout is no proof it fails), and a size is ruled out only
// when kPmtuMaxProbes probes of it in a row are lost (RFC 8899 section 5.1.2).
struct Outage {
  explicit Outage(uint32_t lost_probes) : n(LinkParams{}, LinkParams{}, 5) {
    n.tap_ab = [this, lost_probes](Packet& p) {
      wire::TcpView v = p.tcp();
      if (v.syn()) first = v.seq() + 1;
      if (v.syn() || v.payload().empty()) return true;
      if (dark_until.is_never() && v.seq() - first >= 1'000'000)
        dark_until = n.now + Duration::seconds(1);
      if (!dark_until.is_never() && n.now < dark_until) return false;
      // After the fallback a segment larger than the MSS is a probe.
      if (pr.client.c && v.payload().size() > pr.client.c->send_mss() &&
          probes_dropped < lost_probes) {
        ++probes_dropped;
        return false;
      }
      return true;
    };
    pr.client.shutdown_when_done = false;
    pr.start(n, 12'000'000, 0, 5);
  }
  bool run() {
    return n.run_until([&] { return pr.server.received == pr.client.to_send; },
                       Duration::seconds(60));
  }
  Net n;
  Pair pr;
  SeqNum first;
  Instant dark_until = Instant::never();
  uint32_t probes_dropped = 0;
};

TEST(PmtuProbing, AnOutageIsNoBlackHoleForLong) {
  for (uint32_t lost : {0u, tcp::kPmtuMaxProbes - 1}) {
    SCOPED_TRACE(lost);
    Outage t(lost);
    ASSERT_TRUE(t.run()) << t.pr.server.received;
    EXPECT_EQ(t.pr.server.bad_bytes, 0u);
    auto c = t.n.a.counters();
    EXPECT_EQ(c.pmtu_black_holes, 1u);
    EXPECT_EQ(c.pmtu_probes_failed, lost);
    EXPECT_EQ(c.pmtu_probes_succeeded, 1u);  // one probe, at the link's size
    EXPECT_EQ(t.probes_dropped, lost);
    EXPECT_EQ(t.pr.client.c->send_mss(), 1448u);
  }
}

TEST(PmtuProbing, ASizeIsRuledOutAfterMaxProbesLost) {
  Outage t(tcp::kPmtuMaxProbes);
  ASSERT_TRUE(t.run()) << t.pr.server.received;
  EXPECT_EQ(t.pr.server.bad_bytes, 0u);
  auto c = t.n.a.counters();
  EXPECT_EQ(c.pmtu_probes_failed, tcp::kPmtuMaxProbes);
  EXPECT_GE(c.pmtu_probes_succeeded, 2u);  // then binary search below the ruled-out size
  uint32_t mss = t.pr.client.c->send_mss();
  EXPECT_LT(mss, 1448u);
  EXPECT_GE(mss, 1448u - tcp::kPmtuSearchDone);
}

INSTANTIATE_TEST_SUITE_P(Paths, MixedMtu, ::testing::Range(0, static_cast<int>(std::size(kCases))),
                         [](const auto& info) { return std::string(kCases[info.param].name); });

}  // namespace
}  // namespace ws::sim
