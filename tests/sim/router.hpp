// A "router" between the two simulated stacks whose next hop carries only `mtu` bytes:
// larger datagrams are dropped and, when `icmp` is set, answered with ICMP
// "fragmentation needed" (RFC 1191) quoting the dropped datagram, as a Linux router
// does. The ICMP reaches the sender after the step that sent the datagram (never from
// inside the sender's own output).
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "tests/sim/sim.hpp"

namespace ws::sim {

class MtuRouter {
 public:
  MtuRouter(Net& n, uint32_t path_mtu, bool send_icmp) : mtu(path_mtu), icmp(send_icmp), n_(n) {
    n.tap_ab = [this](Packet& p) { return pass(p, to_a_); };
    n.tap_ba = [this](Packet& p) { return pass(p, to_b_); };
  }
  MtuRouter(const MtuRouter&) = delete;
  MtuRouter& operator=(const MtuRouter&) = delete;

  // Like Net::run_until, delivering the router's ICMP messages between steps.
  bool run_until(const std::function<bool()>& done, Duration max) {
    Instant end = n_.now + max;
    while (!done()) {
      if (n_.now >= end) return false;
      bool more = n_.step(end);
      bool sent = flush();
      if (!more && !sent) return done();
    }
    return true;
  }
  void run_for(Duration d) {
    Instant end = n_.now + d;
    while (n_.now < end) {
      bool more = n_.step(end);
      if (!flush() && !more) break;
    }
  }

  uint32_t mtu;
  bool icmp;
  uint64_t dropped = 0;    // datagrams too large for the next hop
  uint64_t icmp_sent = 0;  // "fragmentation needed" messages sent back
  uint32_t largest = 0;    // largest datagram forwarded (IPv4 total length)

 private:
  bool pass(Packet& p, std::vector<Packet>& back) {
    uint32_t len = static_cast<uint32_t>(p.l4.size()) + 20;
    if (len <= mtu) {
      largest = std::max(largest, len);
      return true;
    }
    ++dropped;
    if (icmp) back.push_back(p);
    return false;
  }
  bool flush() {
    bool any = !to_a_.empty() || !to_b_.empty();
    deliver(to_a_, n_.a);
    deliver(to_b_, n_.b);
    return any;
  }
  void deliver(std::vector<Packet>& q, tcp::TcpStack& to) {
    std::vector<Packet> batch;
    batch.swap(q);
    for (auto& p : batch) {
      ++icmp_sent;
      // RFC 792: the IP header plus at least 8 bytes of the datagram; Linux quotes more.
      size_t n = std::min<size_t>(p.l4.size(), 28);
      to.icmp_error(p.src, p.dst, std::span<const uint8_t>(p.l4.data(), n),
                    tcp::IcmpError::kFragNeeded, static_cast<uint16_t>(mtu), n_.now,
                    static_cast<uint16_t>(p.l4.size() + 20));
    }
  }
  Net& n_;
  std::vector<Packet> to_a_, to_b_;
};

}  // namespace ws::sim
