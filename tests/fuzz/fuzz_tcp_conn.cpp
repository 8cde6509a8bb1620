// Structure-aware: one connection accepted by our stack, driven through its states by
// a script the input decodes into. The peer's segments (flags, sequence and ACK numbers
// as offsets from what each side has sent, lengths, windows, SACK blocks), the
// application's sends, half-closes, closes and aborts, and time advances, in any order.
// The peer's payload byte at stream offset k is always sim::payload_byte(kSeed, k), so
// any in-window segment carries consistent bytes. Invariants:
//  - the bytes delivered to the application are the peer's stream from offset 0, in
//    order, with no gap or change;
//  - the stack never acknowledges a byte the application was not given (the
//    application consumes everything);
//  - after the script the application closes and time runs on (the peer silent):
//    within the retransmission, FIN_WAIT_2 and TIME_WAIT limits the connection is gone.
// Input: byte 0 the SYN's options (bit 0 timestamps, 1 SACK, 2 window scale), byte 1
// its window scale; then operations of 4 bytes (opcode and three arguments).
#include <algorithm>
#include <array>
#include <cstring>

#include "stack/core/bytes.hpp"
#include "tests/fuzz/fuzz_target.hpp"
#include "tests/sim/sim.hpp"

namespace {

using namespace ws;
using namespace ws::wire::tcpflag;

constexpr uint64_t kSeed = 77;
constexpr uint32_t kPeerIsn = 1000000;
constexpr uint16_t kPeerPort = 40000;
constexpr size_t kOp = 4;

enum Op : uint8_t {
  kPeerData,     // in order at the peer's next byte, exact ACK: a1 length, a2 window
  kPeerAck,      // a pure ACK of everything we sent; a1 window, a2 SACK a hole
  kPeerRaw,      // a1 flags, a2 signed seq offset (x 64), a3 signed ACK offset
  kPeerFin,      // FIN at the peer's next byte (a1 bit 0: with data)
  kAppSend,      // a1 x 64 bytes
  kAppClose,     // a1 % 3: shutdown_write, close, abort
  kTime,         // a1 x 10 ms (a2 bit 0: x 1 s)
  kPeerOldData,  // data before RCV.NXT, overlapping it (a1 back, a2 length)
  kOpCount
};

// The peer's stream, computed once: the harness's per-byte loops (payload generation and
// the delivery check) ran instrumented for every byte of every input, most of the time
// an input took. Offsets beyond it (not reachable by 256 operations) fall back to
// sim::payload_byte.
constexpr size_t kStreamBytes = size_t{512} * 1024;
const std::array<uint8_t, kStreamBytes>& peer_stream() {
  static const auto* s = [] {
    auto* a = new std::array<uint8_t, kStreamBytes>;
    for (size_t i = 0; i < a->size(); ++i) (*a)[i] = sim::payload_byte(kSeed, i);
    return a;
  }();
  return *s;
}

// The peer's bytes [off, off + len): a view of peer_stream(), or `spill` filled.
std::span<const uint8_t> peer_bytes(uint64_t off, size_t len, std::vector<uint8_t>& spill) {
  if (off + len <= kStreamBytes) return {peer_stream().data() + off, len};
  spill.resize(len);
  for (size_t i = 0; i < len; ++i) spill[i] = sim::payload_byte(kSeed, off + i);
  return spill;
}

// What the application sends (kAppSend): at most 255 x 64 bytes.
constexpr std::array<uint8_t, 255 * 64> kAppBytes = [] {
  std::array<uint8_t, 255 * 64> a{};
  for (auto& x : a) x = 0x5a;
  return a;
}();

// One stack for every input (building one costs more than most inputs): each input
// leaves it without connections (checked) and without the listener, and time goes on.
struct Net {
  DropCounters drops;
  sim::FakeOutput out{sim::kAddrA};
  tcp::TcpStack st{out, drops, sim::default_config(5)};
  Instant now = Instant::from_ns(10'000'000'000);
};

struct Run {
  explicit Run(Net& n) : out(n.out), st(n.st), now(n.now) { out.captured.clear(); }
  sim::FakeOutput& out;
  tcp::TcpStack& st;
  Instant& now;
  tcp::Connection* conn = nullptr;
  bool closed = false;
  bool app_closed = false;  // close() or abort() called
  uint64_t delivered = 0;
  // The peer: its next sequence number (stream offset of the next new byte), whether it
  // sent FIN, and the timestamps it uses.
  uint32_t peer_next = 0;
  uint32_t peer_hi = 0;   // the highest stream offset + 1 the peer sent in any segment
  bool peer_fin = false;  // a FIN at peer_next (kPeerFin)
  bool any_fin = false;   // a FIN anywhere (kPeerFin or kPeerRaw)
  bool ts = false;
  uint32_t ts_val = 1000;
  uint32_t ts_ecr = 0;
  // What our stack sent: its ISS, the highest sequence number + 1, the last ACK.
  SeqNum iss;
  SeqNum snd_max;
  SeqNum last_ack;
  bool have_ack = false;

  void send_peer(uint8_t flags, SeqNum seq, SeqNum ack, uint16_t window, uint64_t off, size_t len,
                 const wire::SackBlock* sack = nullptr) {
    wire::TcpRepr r;
    r.src_port = kPeerPort;
    r.dst_port = 80;
    r.seq = seq;
    r.ack = ack;
    r.flags = flags;
    r.window = window;
    if (ts) {
      r.ts_val = ts_val += 3;
      r.ts_ecr = ts_ecr;
    }
    if (sack != nullptr) {
      r.sack_count = 1;
      r.sack[0] = *sack;
    }
    if (len != 0) peer_hi = std::max<uint32_t>(peer_hi, static_cast<uint32_t>(off + len));
    any_fin = any_fin || (flags & kFin) != 0;
    std::vector<uint8_t> spill;
    auto v = sim::make_segment(sim::kAddrB, sim::kAddrA, r, peer_bytes(off, len, spill));
    st.input(sim::kAddrB, sim::kAddrA, v, false, now);
    drain();
  }
  // Reads what our stack sent and checks that it acknowledges nothing undelivered.
  void drain() {
    for (const auto& p : out.captured) {
      const wire::TcpView t = p.tcp();
      const uint32_t span = static_cast<uint32_t>(t.payload().size()) +
                            ((t.flags() & kSyn) ? 1 : 0) + ((t.flags() & kFin) ? 1 : 0);
      if (t.flags() & kSyn) iss = t.seq();
      if (!(t.flags() & kRst) && (snd_max.raw() == 0 || t.seq() + span > snd_max))
        snd_max = t.seq() + span;
      wire::TcpOptions o;
      if (t.parse_options(o) && o.ts_val) ts_ecr = *o.ts_val;
      if ((t.flags() & kAck) && !(t.flags() & kRst) && !(t.flags() & kSyn)) {
        last_ack = t.ack();
        have_ack = true;
        // Sequence space acknowledged beyond the SYN: data, and a FIN if one was sent.
        const int64_t acked = t.ack() - SeqNum(kPeerIsn + 1);
        const int64_t fin = any_fin ? 1 : 0;
        WS_FUZZ_CHECK(acked <= int64_t{peer_hi} + fin);
        // After close() the stack discards what arrives (the application is gone).
        if (!app_closed) WS_FUZZ_CHECK(acked - fin <= static_cast<int64_t>(delivered));
      }
    }
    out.captured.clear();
  }
  SeqNum peer_seq() const { return SeqNum(kPeerIsn + 1 + peer_next); }
  // Returns the stack's next deadline.
  Instant advance(Duration d) {
    now = now + d;
    Instant next = st.poll(now);
    drain();
    return next;
  }
};

void open(Run& r, uint8_t opts, uint8_t wscale) {
  r.st.listen(80, {[&r](tcp::Connection& c) {
                c.set_callbacks({nullptr,
                                 [&r](tcp::Connection&, std::span<const uint8_t> d) {
                                   std::vector<uint8_t> spill;
                                   const auto want = peer_bytes(r.delivered, d.size(), spill);
                                   WS_FUZZ_CHECK(d.empty() ||
                                                 std::memcmp(d.data(), want.data(), d.size()) == 0);
                                   r.delivered += d.size();
                                   return d.size();
                                 },
                                 nullptr, nullptr,
                                 [&r](tcp::Connection&, tcp::CloseReason) {
                                   r.conn = nullptr;
                                   r.closed = true;
                                 }});
                r.conn = &c;
                return true;
              }});
  wire::TcpRepr syn;
  syn.src_port = kPeerPort;
  syn.dst_port = 80;
  syn.seq = SeqNum(kPeerIsn);
  syn.flags = kSyn;
  syn.window = 65535;
  syn.mss = 1460;
  if (opts & 4) syn.wscale = static_cast<uint8_t>(wscale % 16);
  syn.sack_permitted = opts & 2;
  r.ts = opts & 1;
  if (r.ts) syn.ts_val = r.ts_val;
  auto v = sim::make_segment(sim::kAddrB, sim::kAddrA, syn);
  r.st.input(sim::kAddrB, sim::kAddrA, v, false, r.now);
  r.drain();
  // The handshake's ACK. Then no more listening: one connection per input (a SYN
  // after it closed gets a RST instead of starting a second one).
  r.send_peer(kAck, r.peer_seq(), r.snd_max, 65535, 0, 0);
  r.st.unlisten(80);
}

void step(Run& r, std::span<const uint8_t> op) {
  const uint8_t a1 = op[1], a2 = op[2], a3 = op[3];
  switch (op[0] % kOpCount) {
    case kPeerData: {
      const size_t len = std::min<size_t>(a1 * 8u, 1460);
      r.send_peer(kAck | kPsh, r.peer_seq(), r.snd_max, static_cast<uint16_t>(a2 << 8 | 0xff),
                  r.peer_next, len);
      r.peer_next += static_cast<uint32_t>(len);
      break;
    }
    case kPeerAck: {
      wire::SackBlock b{r.snd_max - (a2 * 16u + 1u), r.snd_max - 1};
      r.send_peer(kAck, r.peer_seq(), r.snd_max, static_cast<uint16_t>(a1 << 8), 0, 0,
                  a2 != 0 ? &b : nullptr);
      break;
    }
    case kPeerRaw: {
      const int32_t dseq = static_cast<int8_t>(a2) * 64;
      const SeqNum seq = r.peer_seq() + static_cast<uint32_t>(dseq);
      const SeqNum ack =
          r.snd_max + static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(a3)));
      // Consistent bytes for whatever offset the sequence number names.
      const uint64_t off = dseq < 0 && static_cast<uint32_t>(-dseq) > r.peer_next
                               ? 0
                               : static_cast<uint64_t>(static_cast<int64_t>(r.peer_next) + dseq);
      const size_t len = (a1 & kSyn) ? 0 : (a3 & 0x3f) * 8u;
      r.send_peer(a1 & 0x3f, seq, ack, 8192, off, (dseq < 0 && off == 0) ? 0 : len);
      break;
    }
    case kPeerFin: {
      if (r.peer_fin) break;
      const size_t len = (a1 & 1) ? a2 : 0;
      r.send_peer(kAck | kFin, r.peer_seq(), r.snd_max, 65535, r.peer_next, len);
      r.peer_next += static_cast<uint32_t>(len);
      r.peer_fin = true;
      break;
    }
    case kAppSend:
      if (r.conn != nullptr) {
        r.conn->send(std::span<const uint8_t>(kAppBytes).first(a1 * 64u));
        r.drain();
      }
      break;
    case kAppClose:
      if (r.conn != nullptr) {
        if (a1 % 3 == 0) r.conn->shutdown_write();
        r.app_closed = r.app_closed || a1 % 3 != 0;
        if (a1 % 3 == 1) r.conn->close();
        if (a1 % 3 == 2) r.conn->abort();
        r.drain();
      }
      break;
    case kTime:
      r.advance((a2 & 1) ? Duration::seconds(a1) : Duration::millis(a1 * 10));
      break;
    case kPeerOldData: {
      const uint32_t back = std::min<uint32_t>(a1 * 8u, r.peer_next);
      const size_t len = a2 * 8u;
      r.send_peer(kAck, r.peer_seq() - back, r.snd_max, 65535, r.peer_next - back, len);
      if (len > back) r.peer_next += static_cast<uint32_t>(len - back);
      break;
    }
    default:
      break;
  }
}

std::vector<fuzz::Bytes> conn_seeds() {
  // A request and a reply, then both close; data out of order and a FIN; an abort;
  // a SYN and a RST inside the window; a silent peer after our data.
  return {
      {0x07, 7,         kPeerData, 64, 0xff, 0,        kAppSend, 20, 0, 0,     kPeerAck, 0xff, 0,
       0,    kAppClose, 1,         0,  0,    kPeerFin, 0,        0,  0, kTime, 200,      0,    0},
      {0x03, 0, kPeerRaw,  kAck, 2, 32, kPeerData, 16, 0xff, 0, kPeerOldData, 4, 20, 0, kPeerFin, 1,
       9,    0, kAppClose, 0,    0, 0,  kTime,     10, 1,    0},
      {0x00, 0, kAppSend, 200, 0, 0, kAppClose, 2, 0, 0},
      {0x01, 0, kPeerRaw, kSyn, 1, 0, kPeerRaw, kRst, 3, 0, kPeerData, 10, 0xff, 0},
      {0x07, 2, kAppSend, 255, 0, 0, kTime, 255, 1, 0, kPeerAck, 0, 4, 0, kTime, 60, 1, 0},
  };
}

}  // namespace

WS_FUZZ_TARGET(tcp_conn, conn_seeds) {
  if (data.size() < 2) return;
  static Net net;
  Run r(net);
  open(r, data[0], data[1]);
  // Bounded: at most 256 operations.
  for (size_t i = 2; i + kOp <= data.size() && i < 2 + 256 * kOp; i += kOp) {
    step(r, data.subspan(i, kOp));
  }
  // Clean-up: the application closes, the peer falls silent, time runs on. RTO backoff
  // with max_retries, FIN_WAIT_2 and TIME_WAIT all end well within an hour.
  if (r.conn != nullptr) {
    r.app_closed = true;
    r.conn->close();
    r.drain();
  }
  const Instant give_up = r.now + Duration::seconds(3600);
  Instant next = r.advance(Duration::millis(1));
  while (r.st.connection_count() != 0 && r.now < give_up) {
    // From deadline to deadline (at least 10 ms apart: a bounded number of steps).
    const Duration d = next > r.now ? next - r.now : Duration::millis(10);
    next = r.advance(std::max(d, Duration::millis(10)));
  }
  WS_FUZZ_CHECK(r.st.connection_count() == 0);
  WS_FUZZ_CHECK(r.conn == nullptr);
}
