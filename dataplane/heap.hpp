// How the data plane's heap behaves under glibc's malloc: connection storage (Tcb slots,
// send and receive rings that autotuning grows to megabytes) comes from it at connection
// set-up and autotune steps, never per packet, and should cost no page faults there.
#pragma once

#include <cstddef>

namespace ws::dp {

// Process-wide, before any thread allocates: the heap keeps what it has grown to, and ring
// storage up to 32 MiB comes from the heap rather than from mappings of its own.
void keep_heap();

// Pre-faults `bytes` of the calling thread's malloc arena and leaves them free in it, so the
// first rings this thread grows take warm memory. Call it on each pipeline's own thread
// (glibc gives threads separate arenas); keep_heap() must have run. Returns the bytes warmed.
size_t warm_heap(size_t bytes);

}  // namespace ws::dp
