// Two TcpStacks back to back, for the TCP benchmarks (tcp_micro_bench, tcp_churn_bench) and
// for tests that churn many connections (tests/unit/tcp/churn_test.cpp): an output that
// checksums every segment as the IP layer would and queues it for the other stack, on a
// virtual clock. No DPDK, no IP layer, no loss: the TCP engine (and services on it) alone.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"
#include "stack/core/drops.hpp"
#include "stack/core/l4_output.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws::test {

inline constexpr Ipv4Addr kAddrA = Ipv4Addr::from_octets(10, 0, 0, 1);
inline constexpr Ipv4Addr kAddrB = Ipv4Addr::from_octets(10, 0, 0, 2);

struct WireSegment {
  IpAddr src, dst;
  std::vector<uint8_t> bytes;
};

// Segments in flight, recycled so that the loop does not measure the allocator.
class Wire final : public L4Output {
 public:
  explicit Wire(IpAddr self) : self_(self) {}
  bool begin(IpAddr src, IpAddr dst, uint8_t proto, uint32_t l4_len, L4Frame& out) override {
    if (fail_begin) return false;  // no buffer, as a dry mempool answers
    WireSegment* s;
    if (!spare_.empty()) {
      s = spare_.back();
      spare_.pop_back();
    } else {
      pool_.push_back(std::make_unique<WireSegment>());
      s = pool_.back().get();
    }
    s->src = src.is_any() ? self_ : src;
    s->dst = dst;
    s->bytes.resize(l4_len);
    out.buf.handle = s;
    out.l4 = std::span<uint8_t>(s->bytes.data(), s->bytes.size());
    out.src = s->src;
    out.dst = dst;
    out.proto = proto;
    return true;
  }
  void commit(L4Frame& f, Instant) override {
    auto* s = static_cast<WireSegment*>(f.buf.handle);
    std::span<uint8_t> l4(s->bytes);
    uint32_t sum = pseudo_sum(s->src, s->dst, 6, static_cast<uint32_t>(l4.size()));
    store_be16(l4.data() + 16, csum_fold(csum_partial(l4, sum)));
    queue_->push_back(s);
  }
  void abort(L4Frame& f) override { spare_.push_back(static_cast<WireSegment*>(f.buf.handle)); }
  uint32_t mtu_to(IpAddr) const override { return 1500; }
  IpAddr source_for(IpAddr) const override { return self_; }
  uint32_t free_buffers_to(IpAddr) const override { return 4096; }

  void recycle(WireSegment* s) { spare_.push_back(s); }
  std::deque<WireSegment*>* queue_ = nullptr;
  bool fail_begin = false;  // tests: every frame finds no buffer

 private:
  IpAddr self_;
  std::vector<std::unique_ptr<WireSegment>> pool_;
  std::vector<WireSegment*> spare_;
};

inline tcp::TcpConfig bench_config(uint8_t key) {
  tcp::TcpConfig c;
  for (size_t i = 0; i < c.isn_secret.size(); ++i) c.isn_secret[i] = static_cast<uint8_t>(i + key);
  c.time_wait = Duration::millis(1);
  c.delayed_ack = Duration::millis(40);
  return c;
}

struct Pair {
  explicit Pair(tcp::TcpConfig ca = bench_config(1), tcp::TcpConfig cb = bench_config(2))
      : a(wa, da, std::move(ca)), b(wb, db, std::move(cb)) {
    wa.queue_ = &to_b;
    wb.queue_ = &to_a;
  }
  // Delivers segments until both directions are quiet.
  void settle() {
    while (!to_a.empty() || !to_b.empty()) {
      while (!to_b.empty()) {
        WireSegment* s = to_b.front();
        to_b.pop_front();
        b.input(s->src, s->dst, s->bytes, true, now);
        wa.recycle(s);
      }
      while (!to_a.empty()) {
        WireSegment* s = to_a.front();
        to_a.pop_front();
        a.input(s->src, s->dst, s->bytes, true, now);
        wb.recycle(s);
      }
    }
  }
  void tick(Duration d) {
    now += d;
    a.poll(now);
    b.poll(now);
    settle();
  }

  Wire wa{kAddrA}, wb{kAddrB};
  DropCounters da, db;
  tcp::TcpStack a;
  tcp::TcpStack b;
  std::deque<WireSegment*> to_b, to_a;
  Instant now = Instant::from_ns(1'000'000'000);
};

}  // namespace ws::test
