// A listener that answers every SYN with a cookie (tcp.syncookies: always), then one
// fuzzed segment on the same 4-tuple. Invariants: no connection exists without a valid
// cookie, a cookie makes at most one connection, and the exact ACK of the cookie (its
// acknowledgment, sequence number and timestamp echo unchanged, with any data, window or
// FIN) always makes one.
//
// Input: byte 0 the SYN's options (bit 0 timestamps, 1 SACK, 2 window scale), byte 1 its
// window scale, bytes 2-3 its MSS; byte 4 the second segment's flags, bytes 5 and 6 signed
// offsets added to its ACK and sequence numbers, byte 7 XORed into its TSecr (bit 7 of
// byte 0 drops the timestamp option), bytes 8-9 its window; the rest is its payload.
#include <algorithm>

#include "stack/core/bytes.hpp"
#include "tests/fuzz/fuzz_target.hpp"
#include "tests/sim/sim.hpp"

namespace {

using namespace ws;
using namespace ws::wire::tcpflag;

constexpr size_t kHeader = 10;

std::vector<fuzz::Bytes> cookie_seeds() {
  std::vector<fuzz::Bytes> s;
  // Every option, then the exact ACK with a request; without timestamps; a forged ACK;
  // a RST; the exact ACK with FIN.
  s.push_back({0x07, 7, 0x05, 0xb4, kAck | kPsh, 0, 0, 0, 0x01, 0x00, 'G', 'E', 'T', ' ', '/'});
  s.push_back({0x00, 0, 0x05, 0xb4, kAck, 0, 0, 0, 0x10, 0x00});
  s.push_back({0x07, 14, 0x23, 0x28, kAck, 1, 0, 0, 0x10, 0x00});
  s.push_back({0x01, 0, 0x02, 0x18, kRst | kAck, 0, 0, 0, 0, 0});
  s.push_back({0x05, 3, 0x05, 0x8c, kAck | kFin, 0, 0, 0, 0xff, 0xff, 'x'});
  return s;
}

}  // namespace

WS_FUZZ_TARGET(syncookie, cookie_seeds) {
  if (data.size() < kHeader) return;
  // One stack for every input (building one costs more than the input): each input
  // gets its own source port, and shutdown_all() leaves the table empty behind it.
  struct Fixture {
    tcp::TcpConfig cfg = [] {
      tcp::TcpConfig c = sim::default_config(3);
      c.syncookies = tcp::SynCookieMode::kAlways;
      return c;
    }();
    DropCounters drops;
    sim::FakeOutput out{sim::kAddrA};
    tcp::TcpStack st{out, drops, cfg};
    Instant now = Instant::from_ns(5'000'000'000);
    uint16_t port = 1024;
    Fixture() {
      st.listen(80, {[](tcp::Connection&) { return true; }});
    }
  };
  static Fixture f;
  tcp::TcpStack& st = f.st;
  sim::FakeOutput& out = f.out;
  f.now = f.now + Duration::millis(10);
  Instant now = f.now;
  f.port = f.port == 65535 ? 1024 : static_cast<uint16_t>(f.port + 1);
  const tcp::TcpCounters before = st.counters();
  out.captured.clear();

  wire::TcpRepr syn;
  syn.src_port = f.port;
  syn.dst_port = 80;
  syn.seq = SeqNum(123456);
  syn.flags = kSyn;
  syn.window = 65535;
  syn.mss = load_be16(data.data() + 2);
  if (data[0] & 4) syn.wscale = data[1];
  syn.sack_permitted = data[0] & 2;
  if (data[0] & 1) syn.ts_val = 777;
  auto v = sim::make_segment(sim::kAddrB, sim::kAddrA, syn);
  st.input(sim::kAddrB, sim::kAddrA, v, false, now);
  WS_FUZZ_CHECK(st.connection_count() == 0);
  WS_FUZZ_CHECK(out.captured.size() == 1);
  const sim::Packet synack = std::move(out.captured.front());
  out.captured.clear();
  const wire::TcpView sa = synack.tcp();
  wire::TcpOptions so;
  WS_FUZZ_CHECK(sa.parse_options(so));
  WS_FUZZ_CHECK(sa.flags() == (kSyn | kAck) && sa.ack() == syn.seq + 1);

  wire::TcpRepr r;
  r.src_port = f.port;
  r.dst_port = 80;
  r.flags = data[4];
  r.ack = sa.seq() + 1 + static_cast<uint32_t>(static_cast<int8_t>(data[5]));
  r.seq = syn.seq + 1 + static_cast<uint32_t>(static_cast<int8_t>(data[6]));
  const bool echo = so.ts_val.has_value() && !(data[0] & 0x80);
  if (echo) {
    r.ts_val = 800;
    r.ts_ecr = *so.ts_val ^ data[7];
  }
  r.window = load_be16(data.data() + 8);
  auto payload = data.subspan(kHeader, std::min<size_t>(data.size() - kHeader, 1200));
  now = now + Duration::millis(1);
  auto w = sim::make_segment(sim::kAddrB, sim::kAddrA, r, payload);
  st.input(sim::kAddrB, sim::kAddrA, w, false, now);
  st.poll(now + Duration::millis(5));

  const tcp::TcpCounters c = st.counters();
  const uint64_t valid = c.syncookies_valid - before.syncookies_valid;
  const uint64_t accepted = c.connections_accepted - before.connections_accepted;
  WS_FUZZ_CHECK(valid <= 1);
  WS_FUZZ_CHECK(st.connection_count() <= valid);
  WS_FUZZ_CHECK(accepted <= valid);
  const bool exact = (r.flags & kAck) && !(r.flags & (kSyn | kRst)) && data[5] == 0 &&
                     data[6] == 0 && (!echo || data[7] == 0) &&
                     so.ts_val.has_value() == r.ts_val.has_value();
  if (exact) WS_FUZZ_CHECK(valid == 1 && accepted == 1);
  st.shutdown_all(now);
  WS_FUZZ_CHECK(st.connection_count() == 0);
}
