// CPU features the stack's byte loops (checksum, payload pattern) pick their
// vector paths by, detected once at run time: the binary is built for baseline
// x86-64 and must run on any of it.
#pragma once

namespace ws {

// True when the CPU executes AVX2 (false on other architectures).
bool cpu_has_avx2();

}  // namespace ws
