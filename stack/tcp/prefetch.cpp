// The connection table's slots, loaded ahead over a receive burst. A table of many
// connections (TIME_WAIT blocks included) outgrows the caches, and every segment's lookup
// then waits for memory: with about 33 k entries under a connection overload that load
// was 60 % of TcpStack::input and 13 % of the core. The frames of a burst are all in hand
// before the first is processed, so their slots are requested together and arrive while
// the earlier frames are worked on; a few frames before its turn, a frame's connection is
// found (its slot has arrived) and its first lines are requested too. A hint only: nothing
// is checked or counted here, the frame is parsed for real when it is received.
#include <optional>
#include <span>

#include "stack/core/bytes.hpp"
#include "stack/tcp/tcp_stack.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/ipv6.hpp"

namespace ws::tcp {

namespace {
// Above this the table (56-byte entries), or the TIME-WAIT records (112 bytes each), no
// longer fit a core's share of the caches; below it they are cached already and the
// prefetch would only cost its parsing.
constexpr size_t kPrefetchTableBytes = size_t{1} << 20;
constexpr size_t kPortsLen = 4;   // source and destination port, the TCP header's start
constexpr size_t kFlagsEnd = 14;  // the TCP header up to its flags byte
constexpr size_t kFlagsOffset = 13;
constexpr size_t kCacheLine = 64;
constexpr size_t kTcbLinesAhead = 4;
}  // namespace

TcpStack::PrefetchPlan TcpStack::prefetch_plan() const {
  return {conns_.memory_bytes() > kPrefetchTableBytes, time_waits_beyond_cache()};
}

bool TcpStack::time_waits_beyond_cache() const {
  return time_waits_.size() * sizeof(TimeWaitRecord) > kPrefetchTableBytes;
}

namespace {
// The flow of an Ethernet frame carrying TCP, as the table keys it (local side first), and
// whether it is a bare SYN (the only segment that looks for a TIME-WAIT record to take
// over); nothing when the frame is not TCP (or is cut short).
struct FrameFlow {
  FourTuple t;
  bool syn = false;
};

bool bare_syn(std::span<const uint8_t> l4) {
  using namespace wire::tcpflag;
  if (l4.size() < kFlagsEnd) return false;
  return (l4[kFlagsOffset] & (kSyn | kAck | kRst | kFin)) == kSyn;
}

std::optional<FrameFlow> frame_flow(std::span<const uint8_t> frame) {
  const auto eth = wire::EthernetView::parse(frame);
  if (!eth) return std::nullopt;
  const auto l3 = frame.subspan(eth->header_len());
  if (eth->ethertype() == wire::kEtherTypeIpv4) {
    const auto ip = wire::Ipv4View::parse(l3);
    if (!ip || ip->protocol() != wire::kIpProtoTcp || ip->is_fragment() ||
        ip->header_len() + kPortsLen > l3.size())
      return std::nullopt;
    const auto l4 = l3.subspan(ip->header_len());
    const uint8_t* p = l4.data();
    return FrameFlow{{ip->dst(), ip->src(), load_be16(p + 2), load_be16(p)}, bare_syn(l4)};
  }
  if (eth->ethertype() == wire::kEtherTypeIpv6) {
    // Only a TCP header right after the fixed header (extension headers are rare on the
    // fast path; their frames simply go unprefetched).
    const auto ip = wire::Ipv6View::parse(l3);
    if (!ip || ip->next_header() != wire::kIpProtoTcp ||
        wire::Ipv6View::kHeaderLen + kPortsLen > l3.size())
      return std::nullopt;
    const auto l4 = l3.subspan(wire::Ipv6View::kHeaderLen);
    const uint8_t* p = l4.data();
    return FrameFlow{{ip->dst(), ip->src(), load_be16(p + 2), load_be16(p)}, bare_syn(l4)};
  }
  return std::nullopt;
}
}  // namespace

TcpStack::FlowHint TcpStack::prefetch_frame(std::span<const uint8_t> frame,
                                            PrefetchPlan plan) const {
  const auto f = frame_flow(frame);
  if (!f || (!plan.conns && !f->syn)) return {0, FlowHint::Kind::kNone};
  // One hash for both: the TIME-WAIT index is keyed as the connection table is.
  const uint64_t h = conns_.hash(f->t);
  if (f->syn) {
    if (plan.time_waits) time_waits_.prefetch_slot(h);
    return {h, FlowHint::Kind::kSyn};
  }
  conns_.prefetch_hash(h);
  return {h, FlowHint::Kind::kSegment};
}

void TcpStack::prefetch_conn(FlowHint hint, PrefetchPlan plan) const {
  if (hint.kind == FlowHint::Kind::kSyn) {
    // A new connection's SYN: no Tcb to load, but maybe a record to take over.
    if (plan.time_waits) time_waits_.prefetch_record(hint.hash);
    return;
  }
  if (hint.kind != FlowHint::Kind::kSegment || !plan.conns) return;
  const Tcb* c = conns_.find_hashed(hint.hash);
  if (c == nullptr) return;
  // The lines that the segment's first steps read: the tuple, the state, the sequence
  // variables and the timers' fields near the top of the Tcb.
  const auto* b = reinterpret_cast<const char*>(c);
  for (size_t off = 0; off < kTcbLinesAhead * kCacheLine; off += kCacheLine)
    __builtin_prefetch(b + off);
}

// A client's next connection takes the next ephemeral port of pick_port's cursor, and
// under churn that port's tuple is nearly always held by a TIME-WAIT record of the
// connection that used it last, a whole cycle of ports ago: beyond the caches, the
// takeover (reuse_time_wait) waited for the index slot and then for the record, about a
// tenth of a connecting core. Loaded one connection ahead: the record of the next port,
// whose index slot the connection before requested, and the index slot of the port after.
// A hint only, like the rest of this file: a port that pick_port skips costs a wasted load.
void TcpStack::prefetch_ports(IpAddr laddr, Endpoint remote, uint16_t next, uint16_t after) const {
  if (!time_waits_beyond_cache()) return;
  time_waits_.prefetch_record(conns_.hash({laddr, remote.addr, next, remote.port}));
  time_waits_.prefetch_slot(conns_.hash({laddr, remote.addr, after, remote.port}));
}

}  // namespace ws::tcp
