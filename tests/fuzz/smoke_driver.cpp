// Standalone driver for the fuzz targets (no libFuzzer needed): runs every registered
// target over its seeds, every truncation of each seed, and a bounded, seeded stream of
// random and mutated inputs. Deterministic for a given --seed, so a failure reproduces.
//
//   fuzz_smoke [--target NAME] [--iterations N] [--seed S] [--list]
//   fuzz_smoke --write-seeds DIR          (seed corpus for the libFuzzer binaries)
//   fuzz_smoke --target NAME FILE...      (run inputs from files, e.g. a crash)
//
// Each input is copied into an allocation of exactly its size, so AddressSanitizer sees
// any read past the end.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>

#include "tests/fuzz/fuzz_target.hpp"

namespace {

using ws::fuzz::Bytes;

// SplitMix64: small, fast and the same on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }
  uint8_t byte() { return static_cast<uint8_t>(next()); }

 private:
  uint64_t s_;
};

void run_one(const ws::fuzz::Target& t, const Bytes& input) {
  // Exact-size heap copy (a vector may have spare capacity that hides over-reads).
  std::unique_ptr<uint8_t[]> buf(new uint8_t[input.size() + (input.empty() ? 1 : 0)]);
  if (!input.empty()) std::memcpy(buf.get(), input.data(), input.size());
  t.run(std::span<const uint8_t>(buf.get(), input.size()));
}

// Values that sit on the boundaries parsers check: lengths, offsets, type codes.
constexpr uint8_t kInteresting8[] = {0x00, 0x01, 0x02, 0x04, 0x05, 0x06, 0x0f, 0x10, 0x14,
                                     0x3f, 0x40, 0x45, 0x4f, 0x50, 0x7f, 0x80, 0xf0, 0xff};
constexpr uint16_t kInteresting16[] = {0x0000, 0x0001, 0x0007, 0x0008, 0x0013, 0x0014,
                                       0x0015, 0x001c, 0x0028, 0x003c, 0x0800, 0x0806,
                                       0x8100, 0x7fff, 0x8000, 0xfffe, 0xffff};

void mutate(Bytes& b, Rng& rng, const std::vector<Bytes>& seeds) {
  const size_t rounds = 1 + rng.below(8);
  for (size_t r = 0; r < rounds; ++r) {
    switch (rng.below(9)) {
      case 0:  // flip a bit
        if (!b.empty()) b[rng.below(b.size())] ^= static_cast<uint8_t>(1u << rng.below(8));
        break;
      case 1:  // random byte
        if (!b.empty()) b[rng.below(b.size())] = rng.byte();
        break;
      case 2:  // interesting byte
        if (!b.empty()) b[rng.below(b.size())] = kInteresting8[rng.below(std::size(kInteresting8))];
        break;
      case 3:  // interesting 16-bit value, or the input's own length, big-endian
        if (b.size() >= 2) {
          size_t at = rng.below(b.size() - 1);
          uint16_t v = rng.below(4) == 0 ? static_cast<uint16_t>(b.size() - rng.below(40))
                                         : kInteresting16[rng.below(std::size(kInteresting16))];
          b[at] = static_cast<uint8_t>(v >> 8);
          b[at + 1] = static_cast<uint8_t>(v);
        }
        break;
      case 4:  // insert bytes
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(rng.below(b.size() + 1)), 1 + rng.below(8),
                 rng.byte());
        break;
      case 5:  // erase bytes
        if (!b.empty()) {
          size_t at = rng.below(b.size());
          size_t n = std::min(b.size() - at, 1 + rng.below(8));
          b.erase(b.begin() + static_cast<std::ptrdiff_t>(at),
                  b.begin() + static_cast<std::ptrdiff_t>(at + n));
        }
        break;
      case 6:  // truncate
        b.resize(rng.below(b.size() + 1));
        break;
      case 7:  // append random bytes (padding, trailing garbage)
        for (size_t n = 1 + rng.below(32); n > 0; --n) b.push_back(rng.byte());
        break;
      case 8:  // splice: the tail of another seed over our tail
        if (!seeds.empty()) {
          const Bytes& o = seeds[rng.below(seeds.size())];
          size_t at = rng.below(b.size() + 1);
          size_t from = rng.below(o.size() + 1);
          b.resize(at);
          b.insert(b.end(), o.begin() + static_cast<std::ptrdiff_t>(from), o.end());
        }
        break;
    }
  }
}

size_t run_target(const ws::fuzz::Target& t, uint64_t seed, size_t iterations) {
  const std::vector<Bytes> seeds = t.seeds ? t.seeds() : std::vector<Bytes>{};
  size_t count = 0;
  run_one(t, Bytes{});
  ++count;
  for (const Bytes& s : seeds) {
    for (size_t n = 0; n <= s.size(); ++n) {
      run_one(t, Bytes(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n)));
      ++count;
    }
  }
  // Mix the target name into the seed so targets explore independently.
  uint64_t h = seed;
  for (const char* p = t.name; *p; ++p) h = (h ^ static_cast<uint8_t>(*p)) * 0x100000001b3ull;
  Rng rng(h);
  for (size_t i = 0; i < iterations; ++i) {
    Bytes b;
    if (seeds.empty() || rng.below(8) == 0) {
      b.resize(rng.below(rng.below(4) == 0 ? 1600 : 96));
      for (auto& x : b) x = rng.byte();
    } else {
      b = seeds[rng.below(seeds.size())];
      mutate(b, rng, seeds);
    }
    run_one(t, b);
    ++count;
  }
  return count;
}

const ws::fuzz::Target* find_target(std::string_view name) {
  for (const auto& t : ws::fuzz::registry()) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

int write_seeds(const std::filesystem::path& dir) {
  for (const auto& t : ws::fuzz::registry()) {
    auto sub = dir / t.name;
    std::filesystem::create_directories(sub);
    size_t i = 0;
    for (const Bytes& s : t.seeds ? t.seeds() : std::vector<Bytes>{}) {
      std::ofstream f(sub / ("seed-" + std::to_string(i++)), std::ios::binary);
      f.write(reinterpret_cast<const char*>(s.data()), static_cast<std::streamsize>(s.size()));
    }
    std::printf("%s: %zu seeds in %s\n", t.name, i, sub.c_str());
  }
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: fuzz_smoke [--target NAME] [--iterations N] [--seed S] [--list]\n"
               "       fuzz_smoke --write-seeds DIR\n"
               "       fuzz_smoke --target NAME FILE...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  size_t iterations = 100000;
  uint64_t seed = 0x77697265;  // "wire"
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--target") {
      const char* v = value();
      if (!v) return usage();
      only = v;
    } else if (a == "--iterations") {
      const char* v = value();
      if (!v) return usage();
      iterations = std::strtoull(v, nullptr, 0);
    } else if (a == "--seed") {
      const char* v = value();
      if (!v) return usage();
      seed = std::strtoull(v, nullptr, 0);
    } else if (a == "--write-seeds") {
      const char* v = value();
      if (!v) return usage();
      return write_seeds(v);
    } else if (a == "--list") {
      for (const auto& t : ws::fuzz::registry()) std::printf("%s\n", t.name);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return usage();
    } else {
      files.emplace_back(a);
    }
  }

  if (!files.empty()) {
    const ws::fuzz::Target* t = find_target(only);
    if (!t) return usage();
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      Bytes b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::printf("%s: %s (%zu bytes)\n", t->name, f.c_str(), b.size());
      run_one(*t, b);
    }
    return 0;
  }

  if (ws::fuzz::registry().empty()) {
    std::fprintf(stderr, "no fuzz targets registered\n");
    return 1;
  }
  size_t ran = 0;
  for (const auto& t : ws::fuzz::registry()) {
    if (!only.empty() && only != t.name) continue;
    auto start = std::chrono::steady_clock::now();
    size_t n = run_target(t, seed, iterations);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count();
    std::printf("%-14s %8zu inputs  %6lld ms  (seed 0x%llx)\n", t.name, n,
                static_cast<long long>(ms), static_cast<unsigned long long>(seed));
    ++ran;
  }
  if (ran == 0) {
    std::fprintf(stderr, "no target named '%s'\n", only.c_str());
    return 1;
  }
  return 0;
}
