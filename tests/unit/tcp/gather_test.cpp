// Gathered TX frames: TCP writes each segment's header into the frame's first
// buffer and the payload from the send ring straight into the buffers of a chain
// (FakePacketIo with odd segment sizes stands in for a chain of mbufs), summing
// it for the checksum in the same pass. Two real stacks exchange the frames:
// the receiver verifies every checksum and every byte, and each frame's
// checksum is also checked against a one-pass reference (RFC 1071).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "stack/core/bytes.hpp"
#include "stack/iface/stack.hpp"
#include "stack/iface/tcp_transport.hpp"
#include "stack/tcp/mss.hpp"
#include "stack/tcp/tcp_stack.hpp"
#include "stack/tcp/tso.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/tcp.hpp"
#include "tests/support/fake_io.hpp"

namespace ws::tcp {
namespace {

constexpr Ipv4Addr kIpA = Ipv4Addr::from_octets(10, 0, 0, 1);
constexpr Ipv4Addr kIpB = Ipv4Addr::from_octets(10, 0, 0, 2);
constexpr uint16_t kPort = 5001;
constexpr size_t kL2 = 14;
constexpr size_t kL3 = 20;

uint8_t pattern(size_t i) { return static_cast<uint8_t>((i * 131) ^ (i >> 9)); }

// RFC 1071 as literally as possible: big-endian 16-bit words, an odd last byte
// padded on the right, carries folded at the end.
uint16_t ref_sum(std::span<const uint8_t> d, uint64_t s = 0) {
  size_t i = 0;
  for (; i + 1 < d.size(); i += 2) s += (uint32_t{d[i]} << 8) | d[i + 1];
  if (i < d.size()) s += uint32_t{d[i]} << 8;
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(s);
}

// True when the frame's TCP checksum verifies over pseudo header and segment.
bool tcp_checksum_ok(std::span<const uint8_t> frame) {
  auto l4 = frame.subspan(kL2 + kL3);
  uint64_t pseudo = (load_be32(frame.data() + kL2 + 12) >> 16) +
                    (load_be32(frame.data() + kL2 + 12) & 0xffff) +
                    (load_be32(frame.data() + kL2 + 16) >> 16) +
                    (load_be32(frame.data() + kL2 + 16) & 0xffff) + 6 + l4.size();
  return ref_sum(l4, pseudo) == 0xffff;
}

struct Node {
  Node(Ipv4Addr ip, uint8_t mac_last, test::FakePacketIo::Options o, uint32_t mtu,
       TcpConfig cfg = {})
      : io(o), tcp(stack, stack.drops(), cfg), transport(tcp) {
    InterfaceConfig c;
    c.name = "n" + std::to_string(mac_last);
    c.mac = MacAddr{{0x02, 0, 0, 0, 0, mac_last}};
    c.address = Ipv4Cidr{ip, 24};
    c.mtu = mtu;
    stack.add_interface(c, io);
    stack.set_tcp(&transport);
  }
  test::FakePacketIo io;  // first: it must outlive the stack
  Stack stack;
  TcpStack tcp;
  TcpTransport transport;
};

test::FakePacketIo::Options receiver_io() {
  test::FakePacketIo::Options o;
  o.pool_size = 512;
  o.data_room = 9100;
  o.max_frame_len = 9014;
  o.fill_garbage = false;
  return o;
}

// A (the sender, whose buffers are given) -> B (one whole buffer per frame).
struct Net {
  Net(test::FakePacketIo::Options a_io, uint32_t mtu, TcpConfig a_cfg = {})
      : a(kIpA, 1, a_io, mtu, a_cfg), b(kIpB, 2, receiver_io(), mtu) {
    b.tcp.listen(kPort, ListenCallbacks{[this](Connection& c) {
                   ConnCallbacks cb;
                   cb.on_data = [this](Connection&, std::span<const uint8_t> d) {
                     for (uint8_t x : d) bad += x != pattern(received++);
                     return d.size();
                   };
                   c.set_callbacks(std::move(cb));
                   return true;
                 }});
  }
  ~Net() {
    a.tcp.shutdown_all(now);
    b.tcp.shutdown_all(now);
    step();
  }

  // Moves frames both ways until quiet, then runs the timers. A super-segment
  // (TSO) is cut here as a port would, each piece with its own checksums.
  void step() {
    for (int round = 0; round < 1000; ++round) {
      auto fa = a.io.take_sent();
      auto fb = b.io.take_sent();
      if (fa.empty() && fb.empty()) break;
      for (auto& f : fa) {
        if (f.flags & kTxTcpSeg) {
          ++super_segments;
          check_super_segment(f);
          for (auto& piece : cut(f)) b.stack.receive(piece, RxMeta{}, now);
          continue;
        }
        if (f.bytes.size() > kL2 + kL3 + 20 && f.bytes[kL2 + 9] == 6) {
          ++frames;
          if (!tcp_checksum_ok(f.bytes)) ++bad_checksums;
        }
        b.stack.receive(f.bytes, RxMeta{}, now);
      }
      for (auto& f : fb) a.stack.receive(f.bytes, RxMeta{}, now);
    }
    now += Duration::micros(200);
    a.stack.poll(now);
    b.stack.poll(now);
  }

  // A super-segment carries whole MSS multiples up to one IPv4 packet
  // (tso_payload), with the pseudo-header sum less the length in its checksum.
  void check_super_segment(const test::SentFrame& f) {
    size_t hl = f.l4_len;
    size_t payload = f.bytes.size() - kL2 - kL3 - hl;
    EXPECT_EQ(payload % f.tso_segsz, 0u);
    EXPECT_GE(payload, 2u * f.tso_segsz);
    EXPECT_EQ(payload, tso_payload(static_cast<uint32_t>(payload), f.tso_segsz,
                                   static_cast<uint32_t>(hl), 65535));
  }

  std::vector<std::vector<uint8_t>> cut(const test::SentFrame& f) {
    std::vector<std::vector<uint8_t>> out;
    const size_t hdrs = kL2 + kL3 + f.l4_len;
    const uint32_t seq0 = load_be32(f.bytes.data() + kL2 + kL3 + 4);
    for (size_t off = hdrs; off < f.bytes.size(); off += f.tso_segsz) {
      size_t n = std::min<size_t>(f.tso_segsz, f.bytes.size() - off);
      std::vector<uint8_t> p(f.bytes.begin(), f.bytes.begin() + static_cast<ptrdiff_t>(hdrs));
      p.insert(p.end(), f.bytes.begin() + static_cast<ptrdiff_t>(off),
               f.bytes.begin() + static_cast<ptrdiff_t>(off + n));
      uint8_t* ip = p.data() + kL2;
      store_be16(ip + 2, static_cast<uint16_t>(p.size() - kL2));
      store_be16(ip + 10, 0);
      store_be16(ip + 10, static_cast<uint16_t>(~ref_sum({ip, kL3})));
      uint8_t* tcp = ip + kL3;
      store_be32(tcp + 4, seq0 + static_cast<uint32_t>(off - hdrs));
      store_be16(tcp + 16, 0);
      auto l4 = std::span<const uint8_t>(tcp, p.size() - kL2 - kL3);
      uint64_t pseudo =
          (kIpA.v >> 16) + (kIpA.v & 0xffff) + (kIpB.v >> 16) + (kIpB.v & 0xffff) + 6 + l4.size();
      store_be16(tcp + 16, static_cast<uint16_t>(~ref_sum(l4, pseudo)));
      out.push_back(std::move(p));
    }
    return out;
  }

  // Connects A to B and sends `total` pattern bytes; true when B has them all.
  bool transfer(size_t total, int max_steps = 20000) {
    ConnCallbacks cb;
    conn = a.tcp.connect({kIpB, kPort}, std::move(cb), 0, now);
    if (conn == nullptr) return false;
    for (int i = 0; i < max_steps && received < total; ++i) {
      while (sent < total) {
        std::vector<uint8_t> chunk(std::min<size_t>(total - sent, 16384));
        for (size_t k = 0; k < chunk.size(); ++k) chunk[k] = pattern(sent + k);
        size_t n = conn->send(chunk);
        sent += n;
        if (n < chunk.size()) break;
      }
      step();
    }
    return received == total;
  }

  Node a, b;
  Instant now = Instant::from_ns(1'000'000'000);
  Connection* conn = nullptr;
  size_t sent = 0, received = 0, bad = 0;
  size_t frames = 0, bad_checksums = 0, super_segments = 0;
};

test::FakePacketIo::Options sender_io(uint32_t first, uint32_t seg, uint32_t mtu) {
  test::FakePacketIo::Options o;
  o.pool_size = mtu > 1500 && seg < 64 ? 6000 : 2048;
  o.data_room = 2048;
  o.max_frame_len = mtu + 14;
  o.gather_first = first;
  o.gather_segment = seg;
  return o;
}

struct Layout {
  uint32_t mtu, first, seg;
};

class GatherTest : public ::testing::TestWithParam<Layout> {};

// Segment boundaries at odd and even offsets of the payload, in the first
// buffer and between further ones; a one-byte segment size cuts the payload
// at every offset.
TEST_P(GatherTest, SoftwareChecksumAndEveryByteSurviveTheChain) {
  const Layout l = GetParam();
  Net n(sender_io(l.first, l.seg, l.mtu), l.mtu);
  ASSERT_TRUE(n.transfer(300'000));
  EXPECT_EQ(n.bad, 0u);
  EXPECT_GT(n.a.io.gathered(), 10u) << "frames went out as chains";
  EXPECT_GT(n.frames, 10u);
  EXPECT_EQ(n.bad_checksums, 0u);
  EXPECT_EQ(n.b.stack.drops().total(), 0u) << "the receiver verified every checksum";
  EXPECT_TRUE(n.a.io.no_leaks());
}

INSTANTIATE_TEST_SUITE_P(Layouts, GatherTest,
                         ::testing::Values(Layout{9000, 67, 7}, Layout{9000, 101, 999},
                                           Layout{1500, 1023, 1}, Layout{9000, 2047, 2048},
                                           Layout{9000, 2048, 2048}, Layout{1500, 67, 1448}));

// TSO over a chain: super-segments of whole MSS multiples, payload gathered into
// 2 KiB buffers, checksums left to the port (here: the cutter in Net::step).
TEST(Gather, TsoSuperSegmentsAreGatheredAndSizedAsBefore) {
  auto o = sender_io(2048, 2048, 9000);
  o.offloads.ipv4_cksum = o.offloads.tcp_cksum = o.offloads.tcp_tso = true;
  o.offloads.tso_max = 65535;
  o.apply_offloads = true;  // the checksums of ordinary segments, as a NIC would
  Net n(o, 9000);
  ASSERT_TRUE(n.transfer(2'000'000))
      << n.received << " received, " << n.super_segments << " super-segments, B drops "
      << n.b.stack.drops().total() << ", A drops " << n.a.stack.drops().total();
  EXPECT_EQ(n.bad, 0u);
  EXPECT_GT(n.super_segments, 5u);
  EXPECT_GT(n.a.io.gathered(), n.super_segments - 1);
  EXPECT_EQ(n.b.stack.drops().total(), 0u);
}

// The pool runs dry in the middle of a chain: the frame is refused whole (no
// buffer kept), counted as no_mbuf, and the data goes out once buffers return.
TEST(Gather, PoolExhaustedMidChainIsACountedDropAndNothingLeaks) {
  TcpConfig cfg;
  cfg.low_buffers = 1;  // no backpressure yet with 3 buffers left: the chain is tried
  Net n(sender_io(2048, 2048, 9000), 9000, cfg);
  ConnCallbacks cb;
  n.conn = n.a.tcp.connect({kIpB, kPort}, std::move(cb), 0, n.now);
  ASSERT_NE(n.conn, nullptr);
  for (int i = 0; i < 20 && n.conn->state() != TcpState::kEstablished; ++i) n.step();
  ASSERT_EQ(n.conn->state(), TcpState::kEstablished);
  // A full-sized segment needs 5 buffers of 2 KiB; 3 are left.
  const uint32_t before = n.a.io.outstanding();
  n.a.io.set_available(before + 3);
  const uint64_t calls = n.a.io.gather_calls();
  std::vector<uint8_t> data(20000);
  for (size_t k = 0; k < data.size(); ++k) data[k] = pattern(k);
  n.sent = n.conn->send(data);
  ASSERT_EQ(n.sent, data.size());
  n.step();
  EXPECT_GT(n.a.io.gather_calls(), calls);
  EXPECT_GE(n.a.stack.drops().get(DropReason::kNoMbuf), 1u);
  EXPECT_EQ(n.a.io.outstanding(), before) << "the partial chain went back to the pool";
  EXPECT_EQ(n.received, 0u);
  n.a.io.restore_pool();
  for (int i = 0; i < 200 && n.received < data.size(); ++i) n.step();
  EXPECT_EQ(n.received, data.size());
  EXPECT_EQ(n.bad, 0u);
  EXPECT_TRUE(n.a.io.no_leaks());
}

// B's transmit queue is short of buffers (below tcp.low_buffers) while data arrives on
// three connections: their ACKs wait (none is sent). When the queue has room again, but
// less than twice the mark, a connection that asks later still waits behind those that
// asked first, and one turn sends the three ACKs in the order the connections blocked.
// Without that order, whichever asked first after a drain took the room, and ACK-clocked
// connections kept a quiet one from ever sending.
TEST(TxPressure, BlockedConnectionsTakeTurnsInArrivalOrder) {
  Net n(sender_io(2048, 2048, 1500), 1500);
  std::vector<Connection*> c;
  for (int k = 0; k < 3; ++k) {
    c.push_back(n.a.tcp.connect({kIpB, kPort}, ConnCallbacks{}, 0, n.now));
    ASSERT_NE(c.back(), nullptr);
  }
  for (int i = 0; i < 20 && c[2]->state() != TcpState::kEstablished; ++i) n.step();
  for (Connection* x : c) ASSERT_EQ(x->state(), TcpState::kEstablished);
  n.b.io.take_sent();
  const uint32_t low = n.b.tcp.config().low_buffers;
  // Three full segments on connection k, straight into B; B answers (or holds) at once.
  auto deliver = [&n](Connection* x) {
    std::vector<uint8_t> data(4380);
    for (size_t i = 0; i < data.size(); ++i) data[i] = pattern(n.sent + i);
    n.sent += x->send(data);
    for (auto& f : n.a.io.take_sent()) n.b.stack.receive(f.bytes, RxMeta{}, n.now);
  };
  n.b.io.set_available(n.b.io.outstanding() + low - 1);
  deliver(c[1]);
  deliver(c[0]);
  EXPECT_TRUE(n.b.io.sent().empty()) << "an ACK went out below the mark";
  n.b.io.set_available(n.b.io.outstanding() + low + 1);
  deliver(c[2]);
  EXPECT_TRUE(n.b.io.sent().empty()) << "a later connection went ahead of the waiting ones";
  n.b.tcp.serve_tx_waiters(n.now);
  std::vector<uint16_t> order;
  for (auto& f : n.b.io.take_sent()) order.push_back(load_be16(f.bytes.data() + kL2 + kL3 + 2));
  EXPECT_EQ(order,
            (std::vector<uint16_t>{c[1]->local().port, c[0]->local().port, c[2]->local().port}));
  EXPECT_EQ(n.received, n.sent);
  EXPECT_EQ(n.bad, 0u);
  n.b.io.restore_pool();
}

// A writer refused under transmit pressure (send() takes nothing) waits its turn like a
// frame: the turn wakes it (on_writable) and what it writes then goes out in the same turn.
// Left to re-check the mark on a timer, it found the queue refilled by busier connections.
TEST(TxPressure, RefusedWriterIsWokenByItsTurnAndSendsInIt) {
  Net n(sender_io(2048, 2048, 1500), 1500);
  std::vector<uint8_t> data(100);
  for (size_t i = 0; i < data.size(); ++i) data[i] = pattern(i);
  bool woken = false;
  ConnCallbacks cb;
  cb.on_writable = [&](Connection& c) {
    woken = true;
    n.sent += c.send(data);
  };
  n.conn = n.a.tcp.connect({kIpB, kPort}, std::move(cb), 0, n.now);
  ASSERT_NE(n.conn, nullptr);
  for (int i = 0; i < 20 && n.conn->state() != TcpState::kEstablished; ++i) n.step();
  ASSERT_EQ(n.conn->state(), TcpState::kEstablished);
  n.a.io.take_sent();
  const uint32_t low = n.a.tcp.config().low_buffers;
  n.a.io.set_available(n.a.io.outstanding() + low - 1);
  EXPECT_EQ(n.conn->send(data), 0u);
  n.a.io.set_available(n.a.io.outstanding() + low + 1);
  n.a.tcp.serve_tx_waiters(n.now);
  EXPECT_TRUE(woken);
  ASSERT_EQ(n.sent, data.size());
  size_t payload = 0;
  for (auto& f : n.a.io.take_sent()) {
    const size_t hl = (f.bytes[kL2 + kL3 + 12] >> 4) * 4u;
    payload += f.bytes.size() - kL2 - kL3 - hl;
    n.b.stack.receive(f.bytes, RxMeta{}, n.now);
  }
  EXPECT_EQ(payload, data.size()) << "the woken writer's data waited for a later turn";
  EXPECT_EQ(n.received, data.size());
  EXPECT_EQ(n.bad, 0u);
  n.a.io.restore_pool();
}

// Transmit buffers run short while the connection has nothing in flight: send() takes
// nothing, and when the buffers come back the 1 ms re-check alone (no ACK will arrive:
// the peer has nothing to answer) ends the pressure and wakes the writer.
TEST(Gather, PressureEndsByTheTimerWithNothingInFlight) {
  Net n(sender_io(2048, 2048, 9000), 9000);
  int writable = 0;
  ConnCallbacks cb;
  cb.on_writable = [&writable](Connection&) { ++writable; };
  n.conn = n.a.tcp.connect({kIpB, kPort}, std::move(cb), 0, n.now);
  ASSERT_NE(n.conn, nullptr);
  for (int i = 0; i < 20 && n.conn->state() != TcpState::kEstablished; ++i) n.step();
  ASSERT_EQ(n.conn->state(), TcpState::kEstablished);
  for (int i = 0; i < 20; ++i) n.step();           // the handshake's last ACKs settle
  n.a.io.set_available(n.a.io.outstanding() + 8);  // below low_buffers (64)
  std::vector<uint8_t> data(4000);
  for (size_t k = 0; k < data.size(); ++k) data[k] = pattern(k);
  EXPECT_EQ(n.conn->send(data), 0u) << "under pressure send() takes nothing";
  n.a.io.restore_pool();
  for (int i = 0; i < 50 && writable == 0; ++i) n.step();  // 10 ms
  ASSERT_EQ(writable, 1) << "the writer was never woken after the buffers came back";
  n.sent = n.conn->send(data);
  ASSERT_EQ(n.sent, data.size());
  for (int i = 0; i < 50 && n.received < data.size(); ++i) n.step();
  EXPECT_EQ(n.received, data.size());
  EXPECT_EQ(n.bad, 0u);
}

// The pool is empty when connect() sends the SYN: the SYN is counted as no_mbuf and
// sent again once buffers return; the connection does not sit in SYN_SENT for ever.
TEST(Gather, SynWithoutABufferIsSentAgain) {
  Net n(sender_io(2048, 2048, 9000), 9000);
  n.a.io.set_available(n.a.io.outstanding());
  ConnCallbacks cb;
  n.conn = n.a.tcp.connect({kIpB, kPort}, std::move(cb), 0, n.now);
  ASSERT_NE(n.conn, nullptr);
  n.step();
  EXPECT_GE(n.a.stack.drops().get(DropReason::kNoMbuf), 1u);
  EXPECT_EQ(n.conn->state(), TcpState::kSynSent);
  n.a.io.restore_pool();
  for (int i = 0; i < 20000 && n.conn->state() != TcpState::kEstablished; ++i) n.step();  // 4 s
  EXPECT_EQ(n.conn->state(), TcpState::kEstablished);
}

// send_reserve()/send_commit(): the application writes into the send ring in
// place, across its wrap point, and what it commits goes out like send().
TEST(SendReserve, WritesInPlaceAcrossTheWrapAndCommitsLikeSend) {
  Net n(sender_io(2048, 2048, 9000), 9000);
  ConnCallbacks cb;
  n.conn = n.a.tcp.connect({kIpB, kPort}, std::move(cb), 0, n.now);
  ASSERT_NE(n.conn, nullptr);
  for (int i = 0; i < 20 && n.conn->state() != TcpState::kEstablished; ++i) n.step();
  ASSERT_EQ(n.conn->state(), TcpState::kEstablished);
  const size_t total = 3'000'000;
  bool wrapped = false;
  size_t short_commits = 0;
  for (int i = 0; i < 20000 && n.received < total; ++i) {
    while (n.sent < total) {
      Connection::SendSpace sp = n.conn->send_reserve(std::min<size_t>(total - n.sent, 50000));
      if (sp.size() == 0) break;
      wrapped |= !sp.second.empty();
      size_t k = n.sent;
      for (uint8_t& x : sp.first) x = pattern(k++);
      for (uint8_t& x : sp.second) x = pattern(k++);
      // Every third reservation is committed short: the rest is simply not queued.
      size_t want = (i % 3 == 0 && sp.size() > 1) ? sp.size() - 1 : sp.size();
      short_commits += want < sp.size();
      ASSERT_EQ(n.conn->send_commit(want), want);
      n.sent += want;
      EXPECT_EQ(n.conn->send_commit(1), 0u) << "a reservation is committed once";
    }
    n.step();
  }
  EXPECT_EQ(n.received, total);
  EXPECT_EQ(n.bad, 0u);
  EXPECT_TRUE(wrapped) << "some reservation spanned the ring's wrap point";
  EXPECT_GT(short_commits, 0u);
  // Nothing may be committed beyond what was reserved.
  Connection::SendSpace sp = n.conn->send_reserve(10);
  EXPECT_LE(sp.size(), 10u);
  EXPECT_EQ(n.conn->send_commit(1000), sp.size());
}

}  // namespace
}  // namespace ws::tcp
