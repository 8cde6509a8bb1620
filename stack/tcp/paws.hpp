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

}  // namespace ws::tcp
