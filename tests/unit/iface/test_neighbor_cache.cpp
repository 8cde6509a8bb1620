// The IPv6 neighbour cache on a virtual clock: every RFC 4861 state and the moves
// between them, the bounded queues, and ageing.
#include <gtest/gtest.h>

#include <vector>

#include "stack/iface/neighbor_cache.hpp"

namespace ws {
namespace {

using S = NeighborCache::State;

struct Recorder : NeighborActions {
  std::vector<std::pair<Ipv6Addr, std::optional<MacAddr>>> solicits;
  std::vector<std::pair<uint32_t, MacAddr>> sent;  // frame len (as an id), mac
  std::vector<uint32_t> dropped;
  void send_solicit(const Ipv6Addr& t, const std::optional<MacAddr>& u) override {
    solicits.emplace_back(t, u);
  }
  void send_resolved(TxBuf& f, const MacAddr& m) override { sent.emplace_back(f.len, m); }
  void drop_pending(TxBuf& f) override { dropped.push_back(f.len); }
};

const Ipv6Addr kPeer = *Ipv6Addr::parse("2001:db8::2");
const MacAddr kMac = *MacAddr::parse("02:00:00:00:00:02");
const MacAddr kMac2 = *MacAddr::parse("02:00:00:00:00:03");
Instant at(int64_t ms) { return Instant::from_ns(ms * 1000000); }
TxBuf frame(uint32_t id) {
  TxBuf b;
  b.len = id;
  return b;
}

TEST(NeighborCache, IncompleteSolicitsQueuesAndResolves) {
  NeighborCache c;
  Recorder r;
  EXPECT_FALSE(c.resolve(kPeer, at(0)));
  TxBuf f1 = frame(1), f2 = frame(2);
  EXPECT_EQ(c.enqueue(kPeer, f1, at(0), r), NeighborCache::Queued::kQueued);
  EXPECT_EQ(c.enqueue(kPeer, f2, at(1), r), NeighborCache::Queued::kQueued);
  ASSERT_EQ(r.solicits.size(), 1u);  // one solicitation, to the solicited-node group
  EXPECT_FALSE(r.solicits[0].second);
  EXPECT_EQ(c.state_of(kPeer), S::kIncomplete);
  // An advertisement without the target link-layer option leaves it incomplete.
  c.advertised(kPeer, std::nullopt, true, true, at(2), r);
  EXPECT_EQ(c.state_of(kPeer), S::kIncomplete);
  EXPECT_TRUE(c.advertised(kPeer, kMac, true, true, at(3), r));
  EXPECT_EQ(c.state_of(kPeer), S::kReachable);
  ASSERT_EQ(r.sent.size(), 2u);
  EXPECT_EQ(r.sent[0].first, 1u);
  EXPECT_EQ(r.sent[1].second, kMac);
  EXPECT_EQ(c.resolve(kPeer, at(4)), kMac);
}

TEST(NeighborCache, RetransmitsThenFailsDroppingTheQueue) {
  NeighborConfig cfg;
  NeighborCache c(cfg);
  Recorder r;
  TxBuf f = frame(7);
  c.enqueue(kPeer, f, at(0), r);
  Instant next = c.poll(at(0), r);
  EXPECT_EQ(next, at(1000));
  c.poll(at(1000), r);
  c.poll(at(2000), r);
  EXPECT_EQ(r.solicits.size(), 3u);  // MAX_MULTICAST_SOLICIT
  EXPECT_TRUE(r.dropped.empty());
  c.poll(at(3000), r);
  EXPECT_EQ(r.dropped, std::vector<uint32_t>{7});
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.resolve_failures(), 1u);
}

TEST(NeighborCache, ReachableStaleDelayProbe) {
  NeighborCache c;
  Recorder r;
  TxBuf f = frame(1);
  c.enqueue(kPeer, f, at(0), r);
  c.advertised(kPeer, kMac, true, false, at(0), r);
  // REACHABLE_TIME passes: STALE (by poll or by sending).
  c.poll(at(30000), r);
  EXPECT_EQ(c.state_of(kPeer), S::kStale);
  // Sending to a STALE entry uses it and starts DELAY.
  EXPECT_EQ(c.resolve(kPeer, at(30001)), kMac);
  EXPECT_EQ(c.state_of(kPeer), S::kDelay);
  // No confirmation within DELAY_FIRST_PROBE_TIME: PROBE, unicast to the cached MAC.
  r.solicits.clear();
  c.poll(at(35001), r);
  EXPECT_EQ(c.state_of(kPeer), S::kProbe);
  ASSERT_EQ(r.solicits.size(), 1u);
  EXPECT_EQ(r.solicits[0].second, kMac);
  // A solicited advertisement confirms it.
  c.advertised(kPeer, std::nullopt, true, false, at(35100), r);
  EXPECT_EQ(c.state_of(kPeer), S::kReachable);
  // Unanswered probes delete the entry.
  c.poll(at(65100), r);
  c.resolve(kPeer, at(65101));
  c.poll(at(70101), r);
  EXPECT_EQ(c.state_of(kPeer), S::kProbe);
  c.poll(at(71101), r);
  c.poll(at(72101), r);
  c.poll(at(73101), r);
  EXPECT_FALSE(c.state_of(kPeer));
}

TEST(NeighborCache, ConfirmationFromAbove) {
  NeighborCache c;
  Recorder r;
  c.solicited_by(kPeer, kMac, at(0), r);
  EXPECT_EQ(c.state_of(kPeer), S::kStale);
  c.resolve(kPeer, at(1));
  EXPECT_EQ(c.state_of(kPeer), S::kDelay);
  c.confirm(kPeer, at(2));
  EXPECT_EQ(c.state_of(kPeer), S::kReachable);
}

TEST(NeighborCache, OverrideRules) {
  NeighborCache c;
  Recorder r;
  c.solicited_by(kPeer, kMac, at(0), r);
  c.advertised(kPeer, kMac, true, false, at(1), r);
  EXPECT_EQ(c.state_of(kPeer), S::kReachable);
  // A different address without Override: ignored, the entry demoted to STALE.
  c.advertised(kPeer, kMac2, false, false, at(2), r);
  EXPECT_EQ(c.state_of(kPeer), S::kStale);
  EXPECT_EQ(c.resolve(kPeer, at(3)), kMac);
  // With Override it replaces the address; unsolicited: STALE.
  c.advertised(kPeer, kMac2, false, true, at(4), r);
  EXPECT_EQ(c.state_of(kPeer), S::kStale);
  EXPECT_EQ(c.resolve(kPeer, at(5)), kMac2);
  // A solicitation with a new source address updates it too (7.2.3).
  c.solicited_by(kPeer, kMac, at(6), r);
  EXPECT_EQ(c.resolve(kPeer, at(7)), kMac);
  // Advertisements for unknown neighbours create nothing.
  EXPECT_FALSE(c.advertised(*Ipv6Addr::parse("2001:db8::9"), kMac, true, true, at(8), r));
  EXPECT_EQ(c.size(), 1u);
}

TEST(NeighborCache, StaleEntriesAgeOut) {
  NeighborCache c;
  Recorder r;
  c.solicited_by(kPeer, kMac, at(0), r);
  c.poll(at(599999), r);
  EXPECT_EQ(c.size(), 1u);
  c.poll(at(600000), r);
  EXPECT_EQ(c.size(), 0u);
}

TEST(NeighborCache, QueueBounds) {
  NeighborConfig cfg;
  cfg.max_pending_per_entry = 2;
  cfg.max_pending_total = 3;
  cfg.max_entries = 2;
  NeighborCache c(cfg);
  Recorder r;
  TxBuf a = frame(1), b = frame(2), d = frame(3), e = frame(4), g = frame(5);
  EXPECT_EQ(c.enqueue(kPeer, a, at(0), r), NeighborCache::Queued::kQueued);
  EXPECT_EQ(c.enqueue(kPeer, b, at(0), r), NeighborCache::Queued::kQueued);
  EXPECT_EQ(c.enqueue(kPeer, d, at(0), r), NeighborCache::Queued::kQueueFull);  // per entry
  auto p2 = *Ipv6Addr::parse("2001:db8::3");
  auto p3 = *Ipv6Addr::parse("2001:db8::4");
  EXPECT_EQ(c.enqueue(p2, d, at(0), r), NeighborCache::Queued::kQueued);
  EXPECT_EQ(c.enqueue(p2, e, at(0), r), NeighborCache::Queued::kQueueFull);  // in total
  // Both slots INCOMPLETE with waiting frames: a third neighbour finds no room.
  EXPECT_EQ(c.enqueue(p3, g, at(0), r), NeighborCache::Queued::kQueueFull);
  Recorder clear;
  c.clear(clear);
  EXPECT_EQ(clear.dropped.size(), 3u);
  EXPECT_EQ(c.size(), 0u);
}

// A configured neighbour: outside the state machine, never solicited or probed, not
// moved by advertisements, solicitations or confirmations, never aged.
TEST(NeighborCache, StaticEntryIsFixed) {
  NeighborCache c;
  Recorder r;
  ASSERT_TRUE(c.add_static(kPeer, kMac, r));
  EXPECT_EQ(c.resolve(kPeer, at(0)), kMac);
  EXPECT_EQ(c.state_of(kPeer), S::kPermanent);
  EXPECT_TRUE(c.advertised(kPeer, kMac2, true, true, at(1), r));
  c.solicited_by(kPeer, kMac2, at(2), r);
  c.confirm(kPeer, at(3));
  EXPECT_EQ(c.state_of(kPeer), S::kPermanent);
  c.poll(at(3'600'000), r);
  EXPECT_EQ(c.resolve(kPeer, at(3'600'000)), kMac);
  EXPECT_EQ(c.state_of(kPeer), S::kPermanent);
  EXPECT_EQ(c.quiet_until(kPeer, at(3'600'000)), Instant::never());
  EXPECT_TRUE(r.solicits.empty());
  TxBuf f = frame(5);
  EXPECT_EQ(c.enqueue(kPeer, f, at(4), r), NeighborCache::Queued::kQueued);
  ASSERT_EQ(r.sent.size(), 1u);
  EXPECT_EQ(r.sent[0].second, kMac);
}

}  // namespace
}  // namespace ws
