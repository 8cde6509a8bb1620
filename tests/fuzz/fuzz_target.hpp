// The fuzz harness. A target is one file, fuzz_<name>.cpp, that defines
//
//   static std::vector<ws::fuzz::Bytes> my_seeds() { ... }
//   WS_FUZZ_TARGET(name, my_seeds) {
//     // `data` is a std::span<const uint8_t>; parse it and WS_FUZZ_CHECK invariants.
//   }
//
// plus the line '<name>' in tests/fuzz/meson.build. The same file is compiled twice:
//  - into the standalone driver `fuzz_smoke` (any compiler; meson test 'fuzz-smoke'),
//    which runs every registered target over its seeds, every truncation of them, and a
//    seeded, bounded stream of random and mutated inputs;
//  - with clang, into a libFuzzer binary `fuzz_<name>` (WS_LIBFUZZER defined), where the
//    macro also emits LLVMFuzzerTestOneInput. `fuzz_smoke --write-seeds DIR` writes each
//    target's seeds to DIR/<name>/ as a starting corpus.
// Invariant violations abort() so that both the driver and libFuzzer report them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

namespace ws::fuzz {

using Bytes = std::vector<uint8_t>;
using TargetFn = void (*)(std::span<const uint8_t>);
using SeedsFn = std::vector<Bytes> (*)();

struct Target {
  const char* name;
  TargetFn run;
  SeedsFn seeds;
};

// Filled by static Registrar objects before main(); a function-local static avoids the
// static initialisation order problem.
inline std::vector<Target>& registry() {
  static std::vector<Target> targets;
  return targets;
}

struct Registrar {
  Registrar(const char* name, TargetFn run, SeedsFn seeds) {
    registry().push_back({name, run, seeds});
  }
};

[[noreturn]] inline void check_failed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "fuzz invariant violated: %s at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace ws::fuzz

#define WS_FUZZ_CHECK(cond) \
  ((cond) ? static_cast<void>(0) : ::ws::fuzz::check_failed(#cond, __FILE__, __LINE__))

#ifdef WS_LIBFUZZER
#define WS_FUZZ_LIBFUZZER_ENTRY_(fn)                                  \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* d, size_t n) { \
    fn(std::span<const uint8_t>(d, n));                               \
    return 0;                                                         \
  }
#else
#define WS_FUZZ_LIBFUZZER_ENTRY_(fn)
#endif

#define WS_FUZZ_TARGET(name, seeds_fn)                                                       \
  static void ws_fuzz_target_##name(std::span<const uint8_t> data);                          \
  static const ::ws::fuzz::Registrar ws_fuzz_registrar_##name(#name, &ws_fuzz_target_##name, \
                                                              (seeds_fn));                   \
  WS_FUZZ_LIBFUZZER_ENTRY_(ws_fuzz_target_##name)                                            \
  static void ws_fuzz_target_##name([[maybe_unused]] std::span<const uint8_t> data)
