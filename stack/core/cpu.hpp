// CPU features the stack's byte loops (checksum, payload pattern) pick their
// vector paths by, detected once at run time: the binary is built for baseline
// x86-64 and must run on any of it.
#pragma once

namespace ws {

// The detection itself (cpu.cpp); callers use cpu_has_avx2().
bool detect_avx2();

// True when the CPU executes AVX2 (false on other architectures). Inline: a
// 64-byte ping message's pattern is a few vector instructions, and a call here
// cost as much as they do.
inline bool cpu_has_avx2() {
  static const bool v = detect_avx2();
  return v;
}

}  // namespace ws
