// One ws::Stack with one interface on a FakePacketIo, driven by a virtual clock.
// Addresses are fixed so that tests read like packet traces:
//   us   10.0.0.1/24  02:00:00:00:00:01
//   peer 10.0.0.2     02:00:00:00:00:02
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stack/core/addr.hpp"
#include "stack/core/time.hpp"
#include "stack/iface/stack.hpp"
#include "tests/support/fake_io.hpp"
#include "tests/support/frames.hpp"

namespace ws::test {

inline constexpr MacAddr kOurMac{{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}};
inline constexpr MacAddr kPeerMac{{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}};
inline constexpr MacAddr kOtherMac{{0x02, 0x00, 0x00, 0x00, 0x00, 0x99}};
inline constexpr Ipv4Addr kOurIp = Ipv4Addr::from_octets(10, 0, 0, 1);
inline constexpr Ipv4Addr kPeerIp = Ipv4Addr::from_octets(10, 0, 0, 2);
inline constexpr Ipv4Addr kOtherIp = Ipv4Addr::from_octets(10, 0, 0, 3);
inline constexpr Ipv4Addr kSubnetBroadcast = Ipv4Addr::from_octets(10, 0, 0, 255);

inline InterfaceConfig default_interface() {
  InterfaceConfig c;
  c.name = "test0";
  c.mac = kOurMac;
  c.address = Ipv4Cidr{kOurIp, 24};
  c.mtu = 1500;
  return c;
}

// A monotonic virtual clock; starts at 1 s so "zero" never has a special meaning.
struct VirtualClock {
  Instant now = Instant::from_ns(1'000'000'000);
  void advance(Duration d) { now += d; }
};

class StackHarness {
 public:
  explicit StackHarness(FakePacketIo::Options io_opt = {}, StackConfig cfg = {},
                        InterfaceConfig ifc = default_interface())
      : io(io_opt), stack(cfg) {
    port = stack.add_interface(ifc, io);
  }

  // Delivers one frame on our port at the current virtual time.
  void rx(std::span<const uint8_t> frame, RxMeta meta = {}) {
    meta.port = port;
    stack.receive(frame, meta, clock.now);
  }
  // Advances the clock and runs the stack's timers; returns the next deadline.
  Instant advance(Duration d) {
    clock.advance(d);
    return stack.poll(clock.now);
  }
  Instant now() const { return clock.now; }

  // Teaches the stack `ip` -> `mac` with an ARP reply addressed to us, then
  // forgets the frames sent so far.
  void learn(Ipv4Addr ip = kPeerIp, MacAddr mac = kPeerMac) {
    wire::ArpRepr r{wire::ArpOp::kReply, mac, ip, kOurMac, kOurIp};
    rx(arp_frame(EthSpec{kOurMac, mac, {}, {}}, ArpSpec{r}));
    io.clear_sent();
  }

  // Ethernet header of a frame from the peer to us, and an IPv4 header peer -> us.
  static EthSpec eth_in(MacAddr src = kPeerMac, MacAddr dst = kOurMac) {
    return EthSpec{dst, src, {}, {}};
  }
  static Ipv4Spec ip_in(Ipv4Addr src = kPeerIp, Ipv4Addr dst = kOurIp) {
    Ipv4Spec s;
    s.src = src;
    s.dst = dst;
    return s;
  }

  uint64_t drops(DropReason r) const { return stack.drops().get(r); }
  uint64_t total_drops() const { return stack.drops().total(); }

  FakePacketIo io;  // declared first: it must outlive the stack
  Stack stack;
  VirtualClock clock;
  uint16_t port = 0;
};

}  // namespace ws::test
