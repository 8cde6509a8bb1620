// ArpCache timing and bounds on a virtual clock: the cache only decides, and
// reports what to send through ArpActions, which these tests record.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "stack/iface/arp_cache.hpp"

namespace ws {
namespace {

constexpr Ipv4Addr kA = Ipv4Addr::from_octets(10, 0, 0, 2);
constexpr Ipv4Addr kB = Ipv4Addr::from_octets(10, 0, 0, 3);
constexpr Ipv4Addr kC = Ipv4Addr::from_octets(10, 0, 0, 4);
constexpr Ipv4Addr kD = Ipv4Addr::from_octets(10, 0, 0, 5);
constexpr MacAddr kMacA{{0x02, 0, 0, 0, 0, 0x0a}};
constexpr MacAddr kMacB{{0x02, 0, 0, 0, 0, 0x0b}};

Instant at_ms(int64_t ms) { return Instant::from_ns(5'000'000'000) + Duration::millis(ms); }

struct Recorder final : ArpActions {
  struct Resolved {
    uintptr_t id;
    MacAddr mac;
  };
  std::vector<Ipv4Addr> requests;
  std::vector<Resolved> resolved;
  std::vector<uintptr_t> dropped;

  void send_request(Ipv4Addr target) override { requests.push_back(target); }
  void send_resolved(TxBuf& frame, const MacAddr& dst) override {
    resolved.push_back({reinterpret_cast<uintptr_t>(frame.handle), dst});
  }
  void drop_pending(TxBuf& frame) override {
    dropped.push_back(reinterpret_cast<uintptr_t>(frame.handle));
  }
};

// Frames are opaque to the cache: a handle carrying an id is enough.
TxBuf frame(uintptr_t id) {
  TxBuf b;
  b.handle = reinterpret_cast<void*>(id);
  return b;
}

ArpConfig small_config() {
  ArpConfig c;
  c.reachable_time = Duration::seconds(30);
  c.retry_interval = Duration::millis(500);
  c.max_retries = 3;
  c.max_entries = 8;
  c.max_pending_per_entry = 4;
  c.max_pending_total = 6;
  return c;
}

TEST(ArpCache, EnqueueSendsFirstRequestAtOnce) {
  ArpCache cache(small_config());
  Recorder r;
  TxBuf f = frame(1);
  EXPECT_EQ(cache.enqueue(kA, f, at_ms(0), r), ArpCache::Queued::kQueued);
  ASSERT_EQ(r.requests.size(), 1u);
  EXPECT_EQ(r.requests[0], kA);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_FALSE(cache.lookup(kA, at_ms(0)).has_value());
  // A second frame for the same address joins the queue without a new request.
  TxBuf g = frame(2);
  EXPECT_EQ(cache.enqueue(kA, g, at_ms(100), r), ArpCache::Queued::kQueued);
  EXPECT_EQ(r.requests.size(), 1u);
  EXPECT_EQ(cache.poll(at_ms(100), r), at_ms(500));
}

TEST(ArpCache, RetriesEveryIntervalThenDropsPendingFrames) {
  ArpCache cache(small_config());
  Recorder r;
  TxBuf f1 = frame(1), f2 = frame(2);
  cache.enqueue(kA, f1, at_ms(0), r);
  cache.enqueue(kA, f2, at_ms(10), r);
  ASSERT_EQ(r.requests.size(), 1u);

  // Nothing happens before the retry interval has passed.
  EXPECT_EQ(cache.poll(at_ms(499), r), at_ms(500));
  EXPECT_EQ(r.requests.size(), 1u);
  // Retry 2 at +500 ms, retry 3 at +1000 ms.
  EXPECT_EQ(cache.poll(at_ms(500), r), at_ms(1000));
  EXPECT_EQ(r.requests.size(), 2u);
  EXPECT_EQ(cache.poll(at_ms(999), r), at_ms(1000));
  EXPECT_EQ(r.requests.size(), 2u);
  EXPECT_EQ(cache.poll(at_ms(1000), r), at_ms(1500));
  EXPECT_EQ(r.requests.size(), 3u);
  EXPECT_TRUE(r.dropped.empty());
  // max_retries requests were unanswered: give up and drop the queue.
  EXPECT_TRUE(cache.poll(at_ms(1500), r).is_never());
  EXPECT_EQ(r.requests.size(), 3u);
  EXPECT_EQ(r.dropped, (std::vector<uintptr_t>{1, 2}));
  EXPECT_EQ(cache.resolve_failures(), 1u);
  EXPECT_EQ(cache.size(), 0u);
  for (auto ip : r.requests) EXPECT_EQ(ip, kA);
}

TEST(ArpCache, RetryCountAndIntervalFollowConfig) {
  ArpConfig c = small_config();
  c.max_retries = 5;
  c.retry_interval = Duration::millis(250);
  ArpCache cache(c);
  Recorder r;
  TxBuf f = frame(7);
  cache.enqueue(kA, f, at_ms(0), r);
  for (int i = 1; i <= 4; ++i) {
    cache.poll(at_ms(250 * i - 1), r);
    EXPECT_EQ(r.requests.size(), static_cast<size_t>(i));
    cache.poll(at_ms(250 * i), r);
    EXPECT_EQ(r.requests.size(), static_cast<size_t>(i + 1));
  }
  EXPECT_TRUE(r.dropped.empty());
  cache.poll(at_ms(1250), r);
  EXPECT_EQ(r.requests.size(), 5u);
  EXPECT_EQ(r.dropped, (std::vector<uintptr_t>{7}));
}

TEST(ArpCache, LearnFlushesQueueInOrderWithTheLearnedMac) {
  ArpCache cache(small_config());
  Recorder r;
  TxBuf f1 = frame(1), f2 = frame(2), f3 = frame(3);
  cache.enqueue(kA, f1, at_ms(0), r);
  cache.enqueue(kA, f2, at_ms(1), r);
  cache.enqueue(kB, f3, at_ms(2), r);
  cache.learn(kA, kMacA, false, at_ms(300), r);
  ASSERT_EQ(r.resolved.size(), 2u);
  EXPECT_EQ(r.resolved[0].id, 1u);
  EXPECT_EQ(r.resolved[1].id, 2u);
  EXPECT_EQ(r.resolved[0].mac, kMacA);
  EXPECT_EQ(r.resolved[1].mac, kMacA);
  EXPECT_EQ(cache.lookup(kA, at_ms(300)), kMacA);
  EXPECT_FALSE(cache.lookup(kB, at_ms(300)).has_value());
  // The resolved entry stops retrying; B keeps going and fails alone.
  // (B's first request went out at 2 ms.)
  cache.poll(at_ms(502), r);
  cache.poll(at_ms(1002), r);
  EXPECT_TRUE(r.dropped.empty());
  cache.poll(at_ms(1502), r);
  EXPECT_EQ(r.dropped, (std::vector<uintptr_t>{3}));
  EXPECT_EQ(r.requests.size(), 4u);  // one for A, three for B
  EXPECT_EQ(cache.lookup(kA, at_ms(1502)), kMacA);
  for (size_t i = 1; i < r.requests.size(); ++i) EXPECT_EQ(r.requests[i], kB);
}

TEST(ArpCache, EntryExpiresAfterReachableTime) {
  ArpCache cache(small_config());
  Recorder r;
  cache.learn(kA, kMacA, true, at_ms(0), r);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.poll(at_ms(0), r), at_ms(30'000));
  EXPECT_EQ(cache.lookup(kA, at_ms(29'999)), kMacA);
  EXPECT_FALSE(cache.lookup(kA, at_ms(30'000)).has_value());
  EXPECT_EQ(cache.poll(at_ms(29'999), r), at_ms(30'000));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_TRUE(cache.poll(at_ms(30'000), r).is_never());
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_TRUE(r.requests.empty());
  EXPECT_TRUE(r.dropped.empty());
}

// An entry in use is refreshed before it expires (lookup_for_send): requests go out in the
// last max_retries x retry_interval of its life, one per interval, while its MAC stays in
// use; the reply renews it, so frames to a busy neighbour never wait for ARP.
TEST(ArpCache, EntryInUseIsRefreshedBeforeItExpires) {
  ArpCache cache(small_config());  // 30 s, 3 retries every 500 ms
  Recorder r;
  cache.learn(kA, kMacA, true, at_ms(0), r);
  EXPECT_EQ(cache.lookup_for_send(kA, at_ms(28'499), r), kMacA);
  EXPECT_TRUE(r.requests.empty());
  EXPECT_EQ(cache.lookup_for_send(kA, at_ms(28'500), r), kMacA);
  EXPECT_EQ(cache.lookup_for_send(kA, at_ms(28'900), r), kMacA);
  EXPECT_EQ(r.requests, (std::vector<Ipv4Addr>{kA}));
  EXPECT_EQ(cache.lookup_for_send(kA, at_ms(29'000), r), kMacA);
  EXPECT_EQ(r.requests.size(), 2u);
  cache.learn(kA, kMacA, false, at_ms(29'100), r);  // the reply
  EXPECT_EQ(cache.lookup_for_send(kA, at_ms(30'000), r), kMacA);
  EXPECT_EQ(cache.poll(at_ms(30'000), r), at_ms(59'100));
  EXPECT_EQ(r.requests.size(), 2u);
  // lookup() alone (no frame to send) never asks.
  EXPECT_EQ(cache.lookup(kA, at_ms(59'000)), kMacA);
  EXPECT_EQ(r.requests.size(), 2u);
}

// A neighbour that stops answering still expires on time: three refresh requests, then
// the entry is gone and the next frame waits for a fresh resolution.
TEST(ArpCache, UnansweredRefreshExpiresOnTime) {
  ArpCache cache(small_config());
  Recorder r;
  cache.learn(kA, kMacA, true, at_ms(0), r);
  for (int64_t ms = 28'000; ms < 30'000; ms += 100) {
    EXPECT_EQ(cache.lookup_for_send(kA, at_ms(ms), r), kMacA) << ms;
  }
  EXPECT_EQ(r.requests.size(), 3u);
  EXPECT_FALSE(cache.lookup_for_send(kA, at_ms(30'000), r).has_value());
  EXPECT_TRUE(cache.poll(at_ms(30'000), r).is_never());
  EXPECT_EQ(cache.size(), 0u);
}

TEST(ArpCache, RefreshExtendsLifetime) {
  ArpCache cache(small_config());
  Recorder r;
  cache.learn(kA, kMacA, true, at_ms(0), r);
  cache.learn(kA, kMacB, false, at_ms(20'000), r);
  EXPECT_EQ(cache.lookup(kA, at_ms(40'000)), kMacB);
  EXPECT_EQ(cache.poll(at_ms(40'000), r), at_ms(50'000));
}

TEST(ArpCache, ExpiredEntryIsResolvedAgainOnEnqueue) {
  ArpCache cache(small_config());
  Recorder r;
  cache.learn(kA, kMacA, true, at_ms(0), r);
  // Expired but not yet polled away: a frame for it starts a fresh resolution.
  TxBuf f = frame(1);
  EXPECT_EQ(cache.enqueue(kA, f, at_ms(31'000), r), ArpCache::Queued::kQueued);
  EXPECT_EQ(r.requests, (std::vector<Ipv4Addr>{kA}));
  EXPECT_EQ(cache.size(), 1u);
  cache.learn(kA, kMacB, false, at_ms(31'100), r);
  ASSERT_EQ(r.resolved.size(), 1u);
  EXPECT_EQ(r.resolved[0].mac, kMacB);
}

TEST(ArpCache, MergeRuleOnlyCreatesWhenAsked) {
  ArpCache cache(small_config());
  Recorder r;
  // RFC 826: an ARP packet not aimed at us only updates an existing entry.
  cache.learn(kA, kMacA, false, at_ms(0), r);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_FALSE(cache.lookup(kA, at_ms(0)).has_value());
  cache.learn(kA, kMacA, true, at_ms(0), r);
  EXPECT_EQ(cache.size(), 1u);
  cache.learn(kA, kMacB, false, at_ms(1), r);
  EXPECT_EQ(cache.lookup(kA, at_ms(1)), kMacB);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(ArpCache, PerEntryQueueBound) {
  ArpCache cache(small_config());  // 4 per entry
  Recorder r;
  std::vector<TxBuf> frames;
  for (uintptr_t i = 1; i <= 5; ++i) frames.push_back(frame(i));
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(cache.enqueue(kA, frames[i], at_ms(0), r), ArpCache::Queued::kQueued);
  }
  EXPECT_EQ(cache.enqueue(kA, frames[4], at_ms(0), r), ArpCache::Queued::kQueueFull);
  // The rejected frame stays the caller's: only the four queued ones come back.
  cache.learn(kA, kMacA, false, at_ms(1), r);
  EXPECT_EQ(r.resolved.size(), 4u);
  for (const auto& x : r.resolved) EXPECT_NE(x.id, 5u);
}

TEST(ArpCache, TotalQueueBound) {
  ArpCache cache(small_config());  // 4 per entry, 6 in total
  Recorder r;
  std::vector<TxBuf> f;
  for (uintptr_t i = 1; i <= 8; ++i) f.push_back(frame(i));
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(cache.enqueue(kA, f[i], at_ms(0), r), ArpCache::Queued::kQueued);
  }
  EXPECT_EQ(cache.enqueue(kB, f[4], at_ms(0), r), ArpCache::Queued::kQueued);
  EXPECT_EQ(cache.enqueue(kB, f[5], at_ms(0), r), ArpCache::Queued::kQueued);
  EXPECT_EQ(cache.enqueue(kB, f[6], at_ms(0), r), ArpCache::Queued::kQueueFull);
  EXPECT_EQ(cache.enqueue(kC, f[6], at_ms(0), r), ArpCache::Queued::kQueueFull);
  // Flushing A frees room in the shared budget.
  cache.learn(kA, kMacA, false, at_ms(1), r);
  EXPECT_EQ(cache.enqueue(kB, f[6], at_ms(2), r), ArpCache::Queued::kQueued);
  EXPECT_EQ(cache.enqueue(kB, f[7], at_ms(2), r), ArpCache::Queued::kQueued);
  // Drain everything so no frame is left behind.
  cache.learn(kB, kMacB, false, at_ms(3), r);
  cache.learn(kC, kMacB, false, at_ms(3), r);
  cache.poll(at_ms(10'000), r);
  EXPECT_EQ(r.resolved.size() + r.dropped.size(), 8u);
}

TEST(ArpCache, EvictionTakesReachableEntryClosestToExpiry) {
  ArpConfig c = small_config();
  c.max_entries = 3;
  ArpCache cache(c);
  Recorder r;
  cache.learn(kA, kMacA, true, at_ms(1000), r);  // expires at 31 s
  cache.learn(kB, kMacB, true, at_ms(0), r);     // expires at 30 s: oldest
  cache.learn(kC, kMacA, true, at_ms(2000), r);
  EXPECT_EQ(cache.size(), 3u);
  cache.learn(kD, kMacB, true, at_ms(3000), r);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_FALSE(cache.lookup(kB, at_ms(3000)).has_value());
  EXPECT_TRUE(cache.lookup(kA, at_ms(3000)).has_value());
  EXPECT_TRUE(cache.lookup(kC, at_ms(3000)).has_value());
  EXPECT_TRUE(cache.lookup(kD, at_ms(3000)).has_value());
}

TEST(ArpCache, EvictionNeverTakesIncompleteEntries) {
  ArpConfig c = small_config();
  c.max_entries = 2;
  ArpCache cache(c);
  Recorder r;
  TxBuf fa = frame(1), fb = frame(2), fc = frame(3);
  cache.learn(kC, kMacA, true, at_ms(0), r);
  EXPECT_EQ(cache.enqueue(kA, fa, at_ms(0), r), ArpCache::Queued::kQueued);
  // Table full (C reachable, A incomplete): B evicts C, not A.
  EXPECT_EQ(cache.enqueue(kB, fb, at_ms(1), r), ArpCache::Queued::kQueued);
  EXPECT_FALSE(cache.lookup(kC, at_ms(1)).has_value());
  EXPECT_TRUE(r.dropped.empty());
  // Now both entries are incomplete: nothing can be evicted.
  EXPECT_EQ(cache.enqueue(kD, fc, at_ms(2), r), ArpCache::Queued::kQueueFull);
  cache.learn(kD, kMacB, true, at_ms(2), r);
  EXPECT_FALSE(cache.lookup(kD, at_ms(2)).has_value());
  EXPECT_EQ(cache.size(), 2u);
  // Both waiting queues are intact.
  cache.learn(kA, kMacA, false, at_ms(3), r);
  cache.learn(kB, kMacB, false, at_ms(3), r);
  ASSERT_EQ(r.resolved.size(), 2u);
  EXPECT_EQ(r.resolved[0].id, 1u);
  EXPECT_EQ(r.resolved[1].id, 2u);
  EXPECT_TRUE(r.dropped.empty());
}

TEST(ArpCache, SlotsAreReusedAfterRelease) {
  ArpConfig c = small_config();
  c.max_entries = 2;
  ArpCache cache(c);
  Recorder r;
  for (int round = 0; round < 10; ++round) {
    Instant t = at_ms(round * 40'000);
    cache.learn(kA, kMacA, true, t, r);
    cache.learn(kB, kMacB, true, t, r);
    EXPECT_EQ(cache.size(), 2u);
    cache.poll(t + Duration::seconds(30), r);
    EXPECT_EQ(cache.size(), 0u);
  }
}

// A configured neighbour: resolved from the start, with no request ever; the link cannot
// move it; it never ages, is never refreshed, and is never evicted.
TEST(ArpCache, StaticEntryIsFixed) {
  ArpConfig c = small_config();
  c.max_entries = 2;
  ArpCache cache(c);
  Recorder r;
  ASSERT_TRUE(cache.add_static(kA, kMacA, r));
  EXPECT_EQ(cache.lookup_for_send(kA, at_ms(0), r), kMacA);
  cache.learn(kA, kMacB, true, at_ms(10), r);  // a reply or request naming another MAC
  EXPECT_EQ(cache.lookup(kA, at_ms(10)), kMacA);
  cache.poll(at_ms(3'600'000), r);
  EXPECT_EQ(cache.lookup_for_send(kA, at_ms(3'600'000), r), kMacA);
  EXPECT_EQ(cache.quiet_until(kA, at_ms(3'600'000)), Instant::never());
  EXPECT_TRUE(r.requests.empty());
  // A full table evicts the learned entry, never the configured one.
  cache.learn(kB, kMacB, true, at_ms(0), r);
  cache.learn(kC, kMacB, true, at_ms(1), r);
  EXPECT_EQ(cache.lookup(kA, at_ms(2)), kMacA);
  EXPECT_FALSE(cache.lookup(kB, at_ms(2)).has_value());
  EXPECT_TRUE(cache.lookup(kC, at_ms(2)).has_value());
  // Frames handed to enqueue() go out at once.
  TxBuf f = frame(7);
  EXPECT_EQ(cache.enqueue(kA, f, at_ms(3), r), ArpCache::Queued::kQueued);
  ASSERT_EQ(r.resolved.size(), 1u);
  EXPECT_EQ(r.resolved[0].id, 7u);
  EXPECT_EQ(r.resolved[0].mac, kMacA);
}

// Configuring a neighbour that is being resolved sends what waited for it.
TEST(ArpCache, StaticEntryReleasesTheQueue) {
  ArpCache cache(small_config());
  Recorder r;
  TxBuf f = frame(9);
  EXPECT_EQ(cache.enqueue(kA, f, at_ms(0), r), ArpCache::Queued::kQueued);
  ASSERT_TRUE(cache.add_static(kA, kMacB, r));
  ASSERT_EQ(r.resolved.size(), 1u);
  EXPECT_EQ(r.resolved[0].mac, kMacB);
  cache.poll(at_ms(5000), r);
  EXPECT_EQ(r.requests.size(), 1u);  // only the first, before it was configured
}

// A table of permanent entries has no slot for another.
TEST(ArpCache, StaticEntriesFillTheTable) {
  ArpConfig c = small_config();
  c.max_entries = 1;
  ArpCache cache(c);
  Recorder r;
  ASSERT_TRUE(cache.add_static(kA, kMacA, r));
  EXPECT_FALSE(cache.add_static(kB, kMacB, r));
  TxBuf f = frame(1);
  EXPECT_EQ(cache.enqueue(kC, f, at_ms(0), r), ArpCache::Queued::kQueueFull);
  EXPECT_EQ(cache.lookup(kA, at_ms(0)), kMacA);
}

}  // namespace
}  // namespace ws
