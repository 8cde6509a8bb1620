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
// Above this the table (56-byte entries) no longer fits a core's share of the caches;
// below it the slots are cached already and the prefetch would only cost its parsing.
constexpr size_t kPrefetchTableBytes = size_t{1} << 20;
constexpr size_t kPortsLen = 4;  // source and destination port, the TCP header's start
constexpr size_t kCacheLine = 64;
constexpr size_t kTcbLinesAhead = 4;
}  // namespace

bool TcpStack::prefetch_wanted() const { return conns_.memory_bytes() > kPrefetchTableBytes; }

namespace {
// The flow of an Ethernet frame carrying TCP, as the table keys it (local side first), or
// nothing when the frame is not one (or is cut short).
std::optional<FourTuple> frame_tuple(std::span<const uint8_t> frame) {
  const auto eth = wire::EthernetView::parse(frame);
  if (!eth) return std::nullopt;
  const auto l3 = frame.subspan(eth->header_len());
  if (eth->ethertype() == wire::kEtherTypeIpv4) {
    const auto ip = wire::Ipv4View::parse(l3);
    if (!ip || ip->protocol() != wire::kIpProtoTcp || ip->is_fragment() ||
        ip->header_len() + kPortsLen > l3.size())
      return std::nullopt;
    const uint8_t* p = l3.data() + ip->header_len();
    return FourTuple{ip->dst(), ip->src(), load_be16(p + 2), load_be16(p)};
  }
  if (eth->ethertype() == wire::kEtherTypeIpv6) {
    // Only a TCP header right after the fixed header (extension headers are rare on the
    // fast path; their frames simply go unprefetched).
    const auto ip = wire::Ipv6View::parse(l3);
    if (!ip || ip->next_header() != wire::kIpProtoTcp ||
        wire::Ipv6View::kHeaderLen + kPortsLen > l3.size())
      return std::nullopt;
    const uint8_t* p = l3.data() + wire::Ipv6View::kHeaderLen;
    return FourTuple{ip->dst(), ip->src(), load_be16(p + 2), load_be16(p)};
  }
  return std::nullopt;
}
}  // namespace

void TcpStack::prefetch_frame(std::span<const uint8_t> frame) const {
  if (const auto t = frame_tuple(frame)) conns_.prefetch(*t);
}

void TcpStack::prefetch_conn(std::span<const uint8_t> frame) const {
  const auto t = frame_tuple(frame);
  if (!t) return;
  const Tcb* c = conns_.find(*t);
  if (c == nullptr) return;
  // The lines that the segment's first steps read: the tuple, the state, the sequence
  // variables and the timers' fields near the top of the Tcb.
  const auto* b = reinterpret_cast<const char*>(c);
  for (size_t off = 0; off < kTcbLinesAhead * kCacheLine; off += kCacheLine)
    __builtin_prefetch(b + off);
}

}  // namespace ws::tcp
