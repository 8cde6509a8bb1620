// TCP over a port with TSO: the stack hands it super-segments of whole MSS
// multiples and the simulated port cuts them as a NIC does. Every byte is checked
// in both directions, through clean and lossy links, and every segment on the
// wire fits the MSS.
#include <gtest/gtest.h>

#include <string>

#include "stack/tcp/mss.hpp"
#include "tests/sim/apps.hpp"

namespace ws::sim {
namespace {

struct TsoCase {
  const char* name;
  double loss;
  double reorder;
  uint32_t mtu;
  bool sack;
  uint64_t bytes;
  uint32_t segment_frame = 0;  // a port that bounds the frames it cuts (net_tap: its MTU)
};

const TsoCase kCases[] = {
    {"clean1500", 0, 0, 1500, true, 16'000'000},
    {"loss1_1500", 0.01, 0, 1500, true, 6'000'000},
    {"loss1_nosack", 0.01, 0, 1500, false, 4'000'000},
    {"reorder_1500", 0, 0.2, 1500, true, 6'000'000},
    {"clean9000", 0, 0, 9000, true, 16'000'000},
    {"loss1_9000", 0.01, 0.05, 9000, true, 8'000'000},
    {"tap_bound_1500", 0.005, 0, 1500, true, 6'000'000, 1500},
};

class Tso : public ::testing::TestWithParam<int> {};

TEST_P(Tso, EveryByteWithSuperSegments) {
  const TsoCase& tc = kCases[GetParam()];
  auto ca = default_config(1), cb = default_config(2);
  ca.sack = cb.sack = tc.sack;
  LinkParams lp;
  lp.loss = tc.loss;
  lp.reorder = tc.reorder;
  lp.rate_bytes_per_sec = 1.25e9;  // 10 Gbit/s: windows open wide enough for super-segments
  Net n(lp, lp, 7, ca, cb);
  n.out_a.mtu = n.out_b.mtu = tc.mtu;
  n.out_a.tso_max = n.out_b.tso_max = 65535;
  n.out_a.tso_segment_frame = n.out_b.tso_segment_frame = tc.segment_frame;
  const uint32_t mss = tcp::effective_send_mss(tc.mtu - 40, tc.mtu - 40, true);
  uint64_t oversized = 0, malformed = 0, wire_segments = 0, bounded = 0;
  auto check = [&](Packet& pk) {
    ++wire_segments;
    auto v = wire::TcpView::parse(pk.l4);
    wire::TcpOptions o;
    if (!v || !v->parse_options(o)) {
      ++malformed;
      return true;
    }
    if (pk.l4.size() + 20 > tc.mtu || (!v->syn() && v->payload().size() > mss)) ++oversized;
    if (tc.segment_frame != 0 && v->payload().size() == tc.segment_frame - 14 - 20 - 32) ++bounded;
    return true;
  };
  n.tap_ab = check;
  n.tap_ba = check;
  Pair p;
  p.start(n, tc.bytes, tc.bytes / 2, 11);
  bool done =
      n.run_until([&] { return p.client.closed && p.server.closed; }, Duration::seconds(600));
  SCOPED_TRACE(tc.name);
  EXPECT_TRUE(done) << "client rx " << p.client.received << " server rx " << p.server.received;
  EXPECT_EQ(p.server.received, tc.bytes);
  EXPECT_EQ(p.client.received, tc.bytes / 2);
  EXPECT_EQ(p.server.bad_bytes, 0u);
  EXPECT_EQ(p.client.bad_bytes, 0u);
  EXPECT_EQ(malformed, 0u);
  EXPECT_EQ(oversized, 0u);
  // The TSO path was taken, and it carried most of the data.
  auto a = n.a.counters();
  EXPECT_GT(a.tso_super_segments, 0u);
  EXPECT_EQ(a.tso_super_segments, n.out_a.tso_frames);
  EXPECT_GT(n.out_a.sent, a.segments_out) << "super-segments became several wire segments";
  // Where the port bounds the frames it cuts, super-segments are cut at that bound.
  if (tc.segment_frame != 0) {
    EXPECT_GT(bounded, 1000u);
  }
  std::printf("[%s] super-segments a=%llu, wire segments %llu, stack segments a=%llu\n", tc.name,
              static_cast<unsigned long long>(a.tso_super_segments),
              static_cast<unsigned long long>(wire_segments),
              static_cast<unsigned long long>(a.segments_out));
}

INSTANTIATE_TEST_SUITE_P(Cases, Tso, ::testing::Range(0, static_cast<int>(std::size(kCases))),
                         [](const auto& info) { return std::string(kCases[info.param].name); });

// The software path on the same stack: without TSO no super-segment is formed.
TEST(TsoOff, NoSuperSegmentsWithoutTso) {
  Net n(LinkParams{}, LinkParams{}, 3);
  Pair p;
  p.start(n, 2'000'000, 0, 5);
  ASSERT_TRUE(
      n.run_until([&] { return p.client.closed && p.server.closed; }, Duration::seconds(60)));
  EXPECT_EQ(p.server.received, 2'000'000u);
  EXPECT_EQ(n.a.counters().tso_super_segments, 0u);
  EXPECT_EQ(n.out_a.tso_frames, 0u);
}

}  // namespace
}  // namespace ws::sim
