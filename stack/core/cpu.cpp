#include "stack/core/cpu.hpp"

namespace ws {

bool detect_avx2() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();  // needed when first called before constructors have run
  return __builtin_cpu_supports("avx2") != 0;
#else
  return false;
#endif
}

}  // namespace ws
