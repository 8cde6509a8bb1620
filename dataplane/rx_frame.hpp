// A received mbuf as the stack reads it: a PacketView over the data areas of
// the mbuf's segments. Nothing is copied here: a frame in one segment is one
// span, and a chained frame (RX scatter, memif) is a list of spans that the
// stack parses in place, pulling up only a header that straddles two segments
// (stack/core/packet_view.hpp).
#pragma once

#include <rte_mbuf.h>

#include <array>
#include <cstdint>
#include <span>

#include "stack/core/counters.hpp"
#include "stack/core/packet_view.hpp"

namespace ws::dp {

// The largest frame the stack takes: an IPv4 packet of 65535 bytes and its
// Ethernet header; longer chains are cut there (IPv4 input drops them by length).
inline constexpr uint32_t kMaxRxFrame = 65535 + 14;

// The segment list a view points into; it must outlive the view (the pipeline
// keeps one per core and reuses it for every frame).
using RxSegments = std::array<PacketView::Segment, PacketView::kMaxSegments>;

// Points `out` at the bytes of `m`; its length is the smaller of pkt_len and the
// bytes the segments hold, so a broken chain (pkt_len longer than its segments)
// reads short and fails the stack's length checks, counted. False for a chain
// of more than kMaxSegments segments: the caller drops it
// (DropReason::kRxTooManySegments).
inline bool rx_frame(const rte_mbuf* m, RxSegments& segs, StackCounters& counters,
                     PacketView& out) {
  if (m->nb_segs == 1) {
    out = PacketView({rte_pktmbuf_mtod(m, const uint8_t*), m->data_len});
    return true;
  }
  ++counters.rx_chained_frames;
  size_t n = 0;
  for (const rte_mbuf* s = m; s != nullptr; s = s->next) {
    if (n == segs.size()) return false;
    segs[n++] = {rte_pktmbuf_mtod(s, const uint8_t*), s->data_len};
  }
  uint32_t len = m->pkt_len < kMaxRxFrame ? m->pkt_len : kMaxRxFrame;
  out = PacketView(std::span<const PacketView::Segment>(segs.data(), n), len);
  return true;
}

}  // namespace ws::dp
