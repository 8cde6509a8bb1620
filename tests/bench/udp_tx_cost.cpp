// Instructions per datagram sent by the UDP `source` client, deterministic under
// callgrind: the real UdpSourceService on a whole Stack (Ethernet, IPv4, ARP), sending
// flat out to a second Stack back to back in memory (tests/support/stack_wire.hpp), as
// the source -> sink benchmark over memif does (tests/bench/bench_udp_memif.py). Only the
// sender is counted: source_poll (the service's poll, which builds and sends a burst, and
// the data plane's Stack::flush after it). Sent frames are checked (length, UDP checksum
// over the pseudo header) and recycled outside the count.
//
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='*source_poll*'
//            build/tests/bench/udp_tx_cost POLLS [SIZE]   (one command line)
//
// Run it at two poll counts and divide the difference of the totals by the difference of
// the datagrams sent (printed): start-up cancels out. SIZE is the UDP payload (default
// 64). Exits 1 unless every frame sent is a well-formed datagram of that size.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <span>

#include "stack/apps/udp_clients.hpp"
#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"
#include "stack/iface/stack.hpp"
#include "tests/support/stack_wire.hpp"

namespace {

using namespace ws;
using ws::test::Frame;
using ws::test::Host;

__attribute__((noinline)) void source_poll(Stack& s, Service& svc, Instant now) {
  svc.poll(now);
  s.flush(now);
}

// A sent frame: Ethernet, IPv4 without options, UDP with `size` payload bytes and a
// checksum that verifies (RFC 768).
bool well_formed(const Frame& f, uint32_t size) {
  const uint8_t* b = f.bytes.data();
  if (f.len < 14 + 20 + 8 + size || load_be16(b + 12) != 0x0800 || b[14 + 9] != 17) return false;
  if (internet_checksum({b + 14, 20}) != 0) return false;
  const uint16_t l4_len = load_be16(b + 14 + 20 + 4);
  if (l4_len != 8 + size) return false;
  const Ipv4Addr src{load_be32(b + 14 + 12)};
  const Ipv4Addr dst{load_be32(b + 14 + 16)};
  uint32_t sum = ipv4_pseudo_sum(src, dst, 17, l4_len);
  return csum_fold(csum_partial({b + 34, l4_len}, sum)) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const long polls = argc > 1 ? std::atol(argv[1]) : 1000;
  const uint32_t size = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 64;
  if (polls <= 0 || size > 1472) {
    std::fprintf(stderr, "usage: udp_tx_cost POLLS [SIZE <= 1472]\n");
    return 2;
  }
  std::deque<Frame*> a_to_b, b_to_a;
  Host a(1500, MacAddr{{2, 0, 0, 0, 0, 1}}, Ipv4Addr::from_octets(10, 0, 0, 1), a_to_b);
  Host b(1500, MacAddr{{2, 0, 0, 0, 0, 2}}, Ipv4Addr::from_octets(10, 0, 0, 2), b_to_a);
  Instant now = Instant::from_ns(1'000'000'000);
  a.stack.start(now);
  b.stack.start(now);
  ClientParams p;
  p.target = Endpoint{Ipv4Addr::from_octets(10, 0, 0, 2), 9};
  p.message_size = size;
  p.duration = Duration::seconds(0);
  UdpSourceService src("load", p, 40000);
  if (!src.start(a.stack, now)) return 1;
  // ARP: the first datagrams wait for it; let the two stacks resolve each other.
  for (int round = 0; round < 8; ++round) {
    source_poll(a.stack, src, now);
    // Each frame queued by `from` is received by `to`, then handed back to its pool.
    auto pump = [now](std::deque<Frame*>& q, Host& from, Host& to) {
      for (; !q.empty(); q.pop_front()) {
        to.stack.receive(std::span<const uint8_t>(q.front()->bytes.data(), q.front()->len),
                         RxMeta{}, now);
        from.io.recycle(q.front());
      }
      to.stack.flush(now);
    };
    while (!a_to_b.empty() || !b_to_a.empty()) {
      pump(a_to_b, a, b);
      pump(b_to_a, b, a);
    }
  }
  uint64_t frames = 0;
  uint64_t bad = 0;
  for (long i = 0; i < polls; ++i) {
    now = now + Duration::micros(1);
    source_poll(a.stack, src, now);
    while (!a_to_b.empty()) {
      Frame* f = a_to_b.front();
      a_to_b.pop_front();
      if (!well_formed(*f, size)) ++bad;
      ++frames;
      a.io.recycle(f);
    }
  }
  std::printf("polls %ld datagrams %llu malformed %llu\n", polls,
              static_cast<unsigned long long>(frames), static_cast<unsigned long long>(bad));
  return bad == 0 && frames >= static_cast<uint64_t>(polls) ? 0 : 1;
}
