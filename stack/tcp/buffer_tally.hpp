// Running sums of what one TcpStack's connections hold in buffers. The buffers keep
// them up to date themselves as they allocate, fill, drain and free (ByteRing, TxLog,
// the out-of-order map), and the stack at each state change, so TcpStack::counters()
// reads them in O(1) instead of walking every connection: with a million idle
// connections on a core, a walk at each stats interval stalled the core.
#pragma once

#include <cstdint>

namespace ws::tcp {

// The rings bound to one tally (ByteRing::bind): sizes, storage, contents. Unsigned
// sums: a decrease is an addition modulo 2^64, exact as long as every change is counted.
struct RingTally {
  uint64_t capacity = 0;   // ring sizes, allocated or not
  uint64_t allocated = 0;  // storage allocated
  uint64_t bytes = 0;      // contents
};

struct BufferTally {
  RingTally rcv;           // the connections' receive rings
  RingTally snd;           // their send rings
  RingTally spare;         // empty rings kept for the next connections
  uint64_t heap = 0;       // transmit logs and out-of-order maps on the heap
  uint64_t held = 0;       // received bytes held by reference (rx_held.hpp)
  uint64_t snd_limit = 0;  // send buffer limits of the connections in the table
};

// Binds a container's heap storage of `bytes` to the tally `to` (nullptr: none), out of
// the one `tally` held so far.
inline void rebind_heap_tally(uint64_t*& tally, uint64_t* to, uint64_t bytes) {
  if (tally) *tally -= bytes;
  tally = to;
  if (tally) *tally += bytes;
}

}  // namespace ws::tcp
