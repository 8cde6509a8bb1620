// RFC 7323 section 5 (PAWS): the test of a segment's timestamp against TS.Recent, shared by
// a connection's input and a TIME-WAIT record's (time_wait_input.cpp).
#pragma once

#include <cstdint>

#include "stack/core/time.hpp"

namespace ws::tcp {

// RFC 7323 section 5.5: ts_recent older than 24 days is invalid.
inline constexpr Duration kPawsIdle = Duration::seconds(24LL * 24 * 3600);
// PAWS lets a segment through whose timestamp is at most one tick older than TS.Recent
// (as Linux TCP_PAWS_WINDOW). With a 1 ms clock, a segment that reordering held back by a
// millisecond behind a retransmission would otherwise be dropped although its data is new,
// and sent a third time. One tick is far below any sequence-space wrap time (RFC 7323 5.5).
inline constexpr int32_t kPawsWindowTicks = 1;

inline bool paws_old(uint32_t ts_val, uint32_t ts_recent) {
  return static_cast<int32_t>(ts_recent - ts_val) > kPawsWindowTicks;
}

// PAWS drops old duplicates after the sequence space wraps (RFC 7323 5.1) and, by chance,
// those of an earlier incarnation of the connection (5.8). New data (at or above RCV.NXT)
// whose timestamp is a little older than TS.Recent is neither, most often: reordering held
// it back behind a segment sent later, the retransmission that filled the hole at RCV.NXT
// and moved TS.Recent on. Over a path that reorders by 20 ms, dropping it threw away 1 to
// 4 % of the data, which the sender sent again and counted as lost (Linux's receiver drops
// it too). While fewer than 2^31 bytes have arrived plus the window, no sequence number
// in the window has been used before, so such a segment cannot be a wrapped duplicate;
// kPawsReorderTicks bounds its age, which an earlier incarnation's segment meets only by
// chance (1 in 2^22 with a random timestamp offset per connection, as Linux's).
inline constexpr int32_t kPawsReorderTicks = 1000;
inline constexpr uint64_t kPawsNoWrapBytes = 1ull << 31;

inline bool paws_spares_reordered(uint32_t ts_val, uint32_t ts_recent, uint64_t received,
                                  uint32_t window) {
  return static_cast<int32_t>(ts_recent - ts_val) <= kPawsReorderTicks &&
         received + window < kPawsNoWrapBytes;
}

}  // namespace ws::tcp
