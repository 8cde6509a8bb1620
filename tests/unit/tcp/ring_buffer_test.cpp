// ByteRing (stack/tcp/ring_buffer.hpp) against a model of its contents: appends by push and
// by tail_room + commit, reads by contiguous and copy_out, pops and consumes, out-of-order
// writes past the end, at capacities that are not powers of two, so every position wraps
// at every offset.
#include "stack/tcp/ring_buffer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

namespace ws::tcp {
namespace {

struct Rng {
  uint64_t s = 0x2545F4914F6CDD1Dull;
  uint64_t next(uint64_t n) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s % n;
  }
};

// The ring's contents from its head, read back through contiguous() runs.
std::vector<uint8_t> contents(const ByteRing& r) {
  std::vector<uint8_t> out;
  while (out.size() < r.size()) {
    std::span<const uint8_t> run = r.contiguous(out.size(), r.size() - out.size());
    if (run.empty()) break;
    out.insert(out.end(), run.begin(), run.end());
  }
  return out;
}

TEST(ByteRing, EveryOperationMatchesTheModelAcrossWraps) {
  for (size_t cap : {size_t{1}, size_t{7}, size_t{100}, size_t{1000}, size_t{4099}}) {
    RingTally tally;
    ByteRing r(&tally);
    r.resize(cap);
    std::deque<uint8_t> model;
    Rng rng;
    uint8_t next = 0;
    for (int step = 0; step < 20000; ++step) {
      const uint64_t op = rng.next(6);
      const size_t n = static_cast<size_t>(rng.next(cap + 2));
      if (op == 0) {  // push
        std::vector<uint8_t> in(n);
        for (auto& b : in) b = next++;
        const size_t k = r.push(in);
        ASSERT_EQ(k, std::min(n, cap - model.size()));
        model.insert(model.end(), in.begin(), in.begin() + static_cast<ptrdiff_t>(k));
      } else if (op == 1) {  // tail_room + commit of part of it
        auto [a, b] = r.tail_room(n);
        ASSERT_EQ(a.size() + b.size(), std::min(n, cap - model.size()));
        const size_t k = static_cast<size_t>(rng.next(a.size() + b.size() + 1));
        for (size_t i = 0; i < k; ++i) {
          const uint8_t v = next++;
          (i < a.size() ? a[i] : b[i - a.size()]) = v;
          model.push_back(v);
        }
        r.commit(k);
      } else if (op == 2) {  // pop
        const size_t k = std::min(n, model.size());
        r.pop(n);
        model.erase(model.begin(), model.begin() + static_cast<ptrdiff_t>(k));
      } else if (op == 3) {  // consume (the send ring's pop), asked for more at times
        const size_t k = std::min(n, model.size());
        r.consume(n);
        model.erase(model.begin(), model.begin() + static_cast<ptrdiff_t>(k));
      } else if (op == 4 && !model.empty()) {  // copy_out of a piece
        const size_t off = static_cast<size_t>(rng.next(model.size()));
        std::vector<uint8_t> out(static_cast<size_t>(rng.next(model.size() - off + 1)));
        r.copy_out(off, out);
        for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], model[off + i]);
      } else if (op == 5 && model.size() < cap) {  // out-of-order bytes past the end, read back
        const size_t gap = static_cast<size_t>(rng.next(cap - model.size()));
        std::vector<uint8_t> in(static_cast<size_t>(rng.next(cap - model.size() - gap + 1)));
        for (auto& b : in) b = next++;
        std::vector<uint8_t> hole(gap);
        for (auto& b : hole) b = next++;
        r.write_at(model.size() + gap, in);  // first the bytes past the hole, then the hole
        r.write_at(model.size(), hole);
        r.commit(gap + in.size());
        model.insert(model.end(), hole.begin(), hole.end());
        model.insert(model.end(), in.begin(), in.end());
      }
      ASSERT_EQ(r.size(), model.size()) << "cap " << cap << " step " << step;
      ASSERT_EQ(tally.bytes, model.size()) << "cap " << cap << " step " << step;
      ASSERT_EQ(contents(r), std::vector<uint8_t>(model.begin(), model.end()))
          << "cap " << cap << " step " << step;
    }
  }
}

}  // namespace
}  // namespace ws::tcp
