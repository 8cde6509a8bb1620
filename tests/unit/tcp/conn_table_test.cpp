// The open-addressing connection table (stack/tcp/conn_table.hpp) against std::unordered_map
// as the reference: random inserts and erases, keys crowded into few home slots, growth and
// shrinkage, and the probe runs left intact by backward-shift deletion.
#include "stack/tcp/conn_table.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "stack/core/bytes.hpp"
#include "tests/support/tcp_pair.hpp"

namespace ws::tcp {
namespace {

// Tcb* values are only compared, never dereferenced: distinct addresses in one array.
struct Fakes {
  explicit Fakes(size_t n) : mem(n) {}
  Tcb* at(size_t i) { return reinterpret_cast<Tcb*>(&mem[i]); }
  std::vector<uint64_t> mem;
};

// The reference map's hasher: any hash does for it.
struct TupleHash {
  size_t operator()(const FourTuple& t) const {
    return std::hash<uint64_t>{}(t.raddr.lo ^ t.raddr.hi * 31 ^ t.laddr.lo * 17 ^
                                 (uint64_t{t.lport} << 16 | t.rport) * 0x9e3779b97f4a7c15ull);
  }
};

// Odd i: IPv6 tuples beside the IPv4 ones, in the same table.
FourTuple tuple(uint32_t i) {
  const auto port = static_cast<uint16_t>(1024 + i % 60000);
  if (i % 2 == 1) {
    Ipv6Addr r = *Ipv6Addr::parse("2001:db8::2");
    r.b[13] = static_cast<uint8_t>(i / 60000);
    return {IpAddr(*Ipv6Addr::parse("2001:db8::1")), IpAddr(r), port, 7};
  }
  return {Ipv4Addr::from_octets(10, 0, 0, 1),
          Ipv4Addr::from_octets(10, 0, static_cast<uint8_t>(i / 60000), 2), port, 7};
}

TEST(ConnTable, MatchesAReferenceMapUnderRandomChurn) {
  ConnTable t;
  std::unordered_map<FourTuple, Tcb*, TupleHash> ref;
  Fakes f(200000);
  std::mt19937 rng(7);
  std::vector<uint32_t> live;
  for (int step = 0; step < 400000; ++step) {
    // Grows for the first half (more inserts), shrinks in the second.
    const bool grow = step < 200000 ? rng() % 4 != 0 : rng() % 4 == 0;
    if (grow || live.empty()) {
      const uint32_t k = static_cast<uint32_t>(rng() % 200000);
      if (ref.count(tuple(k)) != 0) continue;
      t.insert(tuple(k), f.at(k));
      ref[tuple(k)] = f.at(k);
      live.push_back(k);
    } else {
      const size_t i = rng() % live.size();
      const uint32_t k = live[i];
      live[i] = live.back();
      live.pop_back();
      ASSERT_TRUE(t.erase(tuple(k), f.at(k)));
      ref.erase(tuple(k));
    }
    ASSERT_EQ(t.size(), ref.size());
    // With the stack's trim after every change, the load stays in [1/8, 1/2] above the
    // minimum capacity.
    if (step % 2 == 0) t.shrink_for(t.size());
    ASSERT_LE(2 * t.size(), t.capacity());
    if (t.capacity() > ConnTable::kMinCapacity && step % 2 == 0) {
      ASSERT_GE(8 * t.size(), t.capacity());
    }
    if (step % 997 == 0) {
      for (const auto& [k, v] : ref) ASSERT_EQ(t.find(k), v);
      size_t n = 0;
      t.for_each([&](Tcb*) { ++n; });
      ASSERT_EQ(n, ref.size());
    }
  }
  for (const auto& [k, v] : ref) ASSERT_EQ(t.find(k), v);
  EXPECT_EQ(t.find(tuple(199999 + 1)), nullptr);
}

TEST(ConnTable, GrowsWithTheBurstAndShrinksBackWhenItIsOver) {
  ConnTable t;
  Fakes f(5000);
  EXPECT_EQ(t.capacity(), ConnTable::kMinCapacity);
  for (uint32_t i = 0; i < 5000; ++i) t.insert(tuple(i), f.at(i));
  EXPECT_EQ(t.capacity(), 16384u);  // first power of two with a load of at most 1/2
  for (uint32_t i = 64; i < 5000; ++i) ASSERT_TRUE(t.erase(tuple(i), f.at(i)));
  EXPECT_EQ(t.size(), 64u);
  EXPECT_EQ(t.capacity(), 16384u);   // erase never resizes
  EXPECT_FALSE(t.shrink_for(5000));  // the burst's peak still fills more than 1/8
  EXPECT_TRUE(t.shrink_for(100));    // a peak of 100: a load of at most 1/4
  EXPECT_EQ(t.capacity(), 512u);
  EXPECT_FALSE(t.shrink_for(t.size()));  // 64 fill 1/8 of 512: kept
  for (uint32_t i = 32; i < 64; ++i) ASSERT_TRUE(t.erase(tuple(i), f.at(i)));
  EXPECT_TRUE(t.shrink_for(t.size()));
  EXPECT_EQ(t.capacity(), ConnTable::kMinCapacity);
  for (uint32_t i = 0; i < 32; ++i) EXPECT_EQ(t.find(tuple(i)), f.at(i));
}

// A population that swings between a few entries and a few hundred (short connections
// in bursts) keeps its array: erase does not shrink it, so it is not rebuilt per swing.
TEST(ConnTable, SwingsOfThePopulationKeepTheArray) {
  ConnTable t;
  Fakes f(300);
  for (int round = 0; round < 20; ++round) {
    for (uint32_t i = 0; i < 300; ++i) t.insert(tuple(i), f.at(i));
    EXPECT_EQ(t.capacity(), 1024u);
    for (uint32_t i = 10; i < 300; ++i) ASSERT_TRUE(t.erase(tuple(i), f.at(i)));
    EXPECT_EQ(t.capacity(), 1024u);
    EXPECT_FALSE(t.shrink_for(300));  // the round's peak
    for (uint32_t i = 0; i < 10; ++i) ASSERT_TRUE(t.erase(tuple(i), f.at(i)));
  }
}

TEST(ConnTable, EraseOnlyTheConnectionNamed) {
  ConnTable t;
  Fakes f(2);
  t.insert(tuple(1), f.at(0));
  EXPECT_FALSE(t.erase(tuple(1), f.at(1)));  // another Tcb: left alone
  EXPECT_FALSE(t.erase(tuple(2), f.at(0)));  // not there
  EXPECT_EQ(t.find(tuple(1)), f.at(0));
  EXPECT_TRUE(t.erase(tuple(1), f.at(0)));
  EXPECT_EQ(t.find(tuple(1)), nullptr);
  EXPECT_EQ(t.size(), 0u);
}

// The stack keeps the hash insert() returns and erases with it: it stays valid while the
// table grows and shrinks around the entry (resizing keeps stored hashes).
TEST(ConnTable, EraseWithTheHashInsertReturned) {
  ConnTable t;
  Fakes f(5000);
  std::vector<uint64_t> h(5000);
  for (uint32_t i = 0; i < 5000; ++i) {
    h[i] = t.insert(tuple(i), f.at(i));
    ASSERT_EQ(h[i], t.hash(tuple(i)));
  }
  for (uint32_t i = 0; i < 5000; ++i) {
    ASSERT_TRUE(t.erase(tuple(i), f.at(i), h[i]));
    if (i % 500 == 0) t.shrink_for(t.size());
  }
  EXPECT_EQ(t.size(), 0u);
}

// Keys whose home slots collide and wrap around the end of the array: deleting from the
// middle of a run must keep every later key reachable.
TEST(ConnTable, BackwardShiftKeepsRunsAcrossTheWrap) {
  ConnTable t;
  const size_t mask = t.capacity() - 1;
  // Tuples whose home is one of the last two slots, and a few that live just after 0.
  std::vector<FourTuple> crowd;
  for (uint32_t i = 0; crowd.size() < 40 && i < 1000000; ++i) {
    const FourTuple k = tuple(i);
    const size_t h = t.hash(k) & mask;
    if (h >= mask - 1 || h <= 1) crowd.push_back(k);
  }
  ASSERT_EQ(crowd.size(), 40u);
  Fakes f(crowd.size());
  for (size_t i = 0; i < crowd.size(); ++i) t.insert(crowd[i], f.at(i));
  for (size_t i = 0; i < crowd.size(); i += 3) ASSERT_TRUE(t.erase(crowd[i], f.at(i)));
  for (size_t i = 0; i < crowd.size(); ++i)
    EXPECT_EQ(t.find(crowd[i]), i % 3 == 0 ? nullptr : f.at(i)) << i;
}

// The hash is keyed: under another key the same tuples land in other slots, so a peer
// that does not know the key cannot aim its tuples at one slot.
TEST(ConnTable, TheSlotOfATupleDependsOnTheKey) {
  ConnTable a({1, 2, 3, 4}), b({1, 2, 3, 5}), c({5, 2, 3, 4});
  size_t differ_b = 0, differ_c = 0;
  for (uint32_t i = 0; i < 64; ++i) {
    differ_b += a.hash(tuple(i)) != b.hash(tuple(i));
    differ_c += a.hash(tuple(i)) != c.hash(tuple(i));
    EXPECT_EQ(a.hash(tuple(i)), ConnTable({1, 2, 3, 4}).hash(tuple(i)));
  }
  EXPECT_EQ(differ_b, 64u);
  EXPECT_EQ(differ_c, 64u);
  // Tuples that differ in one field only still spread over the slots.
  std::vector<bool> seen(a.capacity());
  size_t distinct = 0;
  for (uint32_t p = 0; p < 64; ++p) {
    FourTuple k = tuple(0);
    k.rport = static_cast<uint16_t>(1000 + p);
    const size_t h = a.hash(k) & (a.capacity() - 1);
    distinct += !seen[h];
    seen[h] = true;
  }
  EXPECT_GT(distinct, 48u);
}

}  // namespace
}  // namespace ws::tcp

namespace ws::test {
namespace {

// An Ethernet + IPv4 + TCP frame's first bytes, or Ethernet + IPv6 + TCP.
std::vector<uint8_t> tcp_frame(bool v6) {
  std::vector<uint8_t> f(v6 ? 14 + 40 + 20 : 14 + 20 + 20, 0);
  store_be16(f.data() + 12, v6 ? 0x86dd : 0x0800);
  if (v6) {
    f[14] = 0x60;
    f[14 + 6] = 6;  // next header: TCP
  } else {
    f[14] = 0x45;
    f[14 + 9] = 6;  // protocol: TCP
  }
  return f;
}

// Both prefetch steps on `full` cut to every length from none to whole (each cut a heap
// copy of exactly its bytes, so that a read past it is a heap overflow under ASan); returns
// what the whole frame was taken for.
tcp::TcpStack::FlowHint::Kind prefetch_every_cut(const tcp::TcpStack& s,
                                                 const std::vector<uint8_t>& full) {
  const tcp::TcpStack::PrefetchPlan all{true, true};
  tcp::TcpStack::FlowHint h{0, tcp::TcpStack::FlowHint::Kind::kNone};
  for (size_t n = 0; n <= full.size(); ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    h = s.prefetch_frame(cut, all);
    s.prefetch_conn(h, all);
  }
  return h.kind;
}

// The receive-burst prefetch reads only inside the frame it is given, whatever it is cut to
// or holds (ASan runs these suites too), for a segment of a live connection and for a bare
// SYN to a tuple in TIME-WAIT, and a small table is not prefetched at all.
TEST(ConnTablePrefetch, ReadsOnlyInsideTheFrame) {
  Pair p;
  EXPECT_FALSE(p.b.prefetch_plan().any());
  // A connection from A's port 40000 to B's port 80, so that one frame below finds it, and
  // later its TIME-WAIT record at B (B closes first).
  tcp::Connection* server = nullptr;
  ASSERT_TRUE(p.b.listen(80, {[&](tcp::Connection& c) {
                           server = &c;
                           return true;
                         }}));
  tcp::Connection* client = p.a.connect({kAddrB, 80}, {}, 40000, p.now);
  ASSERT_NE(client, nullptr);
  p.settle();
  ASSERT_EQ(p.b.connection_count(), 1u);
  ASSERT_NE(server, nullptr);
  for (bool time_wait : {false, true}) {
    if (time_wait) {
      server->close();
      p.settle();
      client->close();
      p.settle();
      ASSERT_EQ(p.b.table_sizes().time_wait, 1u);
    }
    for (bool v6 : {false, true}) {
      std::vector<uint8_t> full = tcp_frame(v6);
      if (!v6) {
        store_be32(full.data() + 14 + 12, kAddrA.v);
        store_be32(full.data() + 14 + 16, kAddrB.v);
        store_be16(full.data() + 34, 40000);
        store_be16(full.data() + 36, 80);
      }
      const size_t flags = full.size() - 20 + 13;
      using Kind = tcp::TcpStack::FlowHint::Kind;
      full[flags] = 0x10;  // ACK
      EXPECT_EQ(prefetch_every_cut(p.b, full), Kind::kSegment);
      full[flags] = 0x02;  // a bare SYN
      EXPECT_EQ(prefetch_every_cut(p.b, full), Kind::kSyn);
      full[flags] = 0x12;  // SYN,ACK: a segment of a connection
      EXPECT_EQ(prefetch_every_cut(p.b, full), Kind::kSegment);
    }
  }
  std::vector<uint8_t> junk(64);
  for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<uint8_t>(i * 37 + 11);
  junk[14] = 0x4f;  // IPv4 with a header length of 60 in a 50-byte remainder
  store_be16(junk.data() + 12, 0x0800);
  junk[14 + 9] = 6;
  junk[14 + 6] = 0;
  junk[14 + 7] = 0;
  EXPECT_EQ(prefetch_every_cut(p.b, junk), tcp::TcpStack::FlowHint::Kind::kNone);
}

}  // namespace
}  // namespace ws::test
