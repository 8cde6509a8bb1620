// A received mbuf as the bytes the stack parses. The stack reads one contiguous
// span, so a frame in one segment is passed in place and a chained frame (RX
// scatter) is copied whole into the core's scratch buffer: the IPv4, UDP and
// TCP headers may straddle segment boundaries anywhere, and their checks
// (lengths, checksums) then run over one copy.
#pragma once

#include <rte_mbuf.h>

#include <algorithm>
#include <cstdint>
#include <span>

#include "stack/core/counters.hpp"

namespace ws::dp {

// The largest frame the stack takes: an IPv4 packet of 65535 bytes and its
// Ethernet header; longer chains are cut there (IPv4 input drops them by length).
inline constexpr uint32_t kMaxRxFrame = 65535 + 14;

inline std::span<const uint8_t> rx_frame(const rte_mbuf* m, std::span<uint8_t> scratch,
                                         StackCounters& counters) {
  if (m->nb_segs == 1) return {rte_pktmbuf_mtod(m, const uint8_t*), m->data_len};
  uint32_t len =
      std::min<uint32_t>({m->pkt_len, kMaxRxFrame, static_cast<uint32_t>(scratch.size())});
  ++counters.rx_chained_frames;
  const auto* p = static_cast<const uint8_t*>(rte_pktmbuf_read(m, 0, len, scratch.data()));
  if (p == nullptr) return {};  // pkt_len longer than the chain: a broken mbuf
  return {p, len};
}

}  // namespace ws::dp
