// IPv6 input through a whole stack: an IPv6 packet (after an Ethernet header the target
// writes, to our MAC or to a multicast group) handed over in one buffer and cut into
// segments. Both stacks must count the same drops and send the same frames, every
// packet must be delivered or dropped under a reason, and the extension-header walk
// must stay inside the packet.
#include <algorithm>
#include <array>

#include "stack/core/checksum.hpp"
#include "stack/iface/stack.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/icmpv6.hpp"
#include "stack/wire/ipv6.hpp"
#include "tests/fuzz/fuzz_target.hpp"
#include "tests/fuzz/null_io.hpp"

namespace {

using namespace ws;

const MacAddr kMac{{0x02, 0, 0, 0, 0, 0x01}};
const Ipv6Addr kOur = *Ipv6Addr::parse("2001:db8::1");
const Ipv6Addr kPeer = *Ipv6Addr::parse("2001:db8::2");

struct Host {
  fuzz::NullIo io;
  Stack stack;
  Host() {
    InterfaceConfig c;
    c.name = "fuzz6";
    c.mac = kMac;
    c.address = Ipv4Cidr{Ipv4Addr::from_octets(10, 0, 0, 1), 24};
    c.addresses6 = {Ipv6Cidr{kOur, 64}};
    c.link_local = *Ipv6Addr::parse("fe80::1");
    c.dad_transmits = 0;  // addresses usable at once
    stack.add_interface(c, io);
    stack.start(Instant::from_ns(1'000'000'000));
  }
};

// An IPv6 packet: fixed header, then `nh` and `payload`; ICMPv6 messages get a checksum.
fuzz::Bytes packet(const Ipv6Addr& src, const Ipv6Addr& dst, uint8_t hop, uint8_t nh,
                   fuzz::Bytes payload, size_t icmp_at = SIZE_MAX) {
  if (icmp_at != SIZE_MAX) {
    std::span<uint8_t> m(payload.data() + icmp_at, payload.size() - icmp_at);
    wire::fill_icmpv6_checksum(m, src, dst);
  }
  fuzz::Bytes p(40 + payload.size());
  wire::emit_ipv6(p.data(),
                  wire::Ipv6Repr{src, dst, nh, hop, 0, 0, static_cast<uint16_t>(payload.size())});
  std::copy(payload.begin(), payload.end(), p.begin() + 40);
  return p;
}

std::vector<fuzz::Bytes> ipv6_seeds() {
  fuzz::Bytes echo = {128, 0, 0, 0, 0, 1, 0, 1, 'a', 'b', 'c', 'd'};
  fuzz::Bytes ns(32, 0);
  ns[0] = 135;
  kOur.to_bytes(ns.data() + 8);
  wire::emit_ndp_link_option(ns.data() + 24, wire::kNdpOptSourceLinkAddr,
                             MacAddr{{0x02, 0, 0, 0, 0, 2}});
  fuzz::Bytes na = ns;
  na[0] = 136;
  na[4] = 0x60;
  kPeer.to_bytes(na.data() + 8);
  na[24] = 2;
  fuzz::Bytes dopt = {58, 0, 1, 4, 0, 0, 0, 0};
  dopt.insert(dopt.end(), echo.begin(), echo.end());
  fuzz::Bytes frag = {58, 0, 0, 1, 0, 0, 0, 7};
  frag.insert(frag.end(), echo.begin(), echo.end());
  fuzz::Bytes rh0 = {58, 0, 0, 1, 0, 0, 0, 0};
  rh0.insert(rh0.end(), echo.begin(), echo.end());
  std::vector<fuzz::Bytes> out = {
      packet(kPeer, kOur, 64, 58, echo, 0),
      packet(kPeer, kOur.solicited_node(), 255, 58, ns, 0),
      packet(kPeer, kOur, 255, 58, na, 0),
      packet(kPeer, kOur, 64, 60, dopt, 8),
      packet(kPeer, kOur, 64, 44, frag, 8),
      packet(kPeer, kOur, 64, 43, rh0, 8),
      packet(kPeer, kOur, 64, 17, {0, 7, 0, 7, 0, 8, 0, 0}),
  };
  // Byte 0 of an input picks the cuts (as chained_input) and the Ethernet destination.
  for (auto& p : out) p.insert(p.begin(), uint8_t{0});
  return out;
}

void check_walk(std::span<const uint8_t> pkt) {
  auto ip = wire::Ipv6View::parse(pkt);
  if (!ip) return;
  const size_t n = std::min<size_t>(pkt.size() - 40, ip->payload_len());
  const PacketView payload(pkt.subspan(40, n));
  wire::Ipv6Chain c;
  if (!wire::walk_ipv6_chain(payload, ip->next_header(), ip->dst().is_multicast(), c)) {
    WS_FUZZ_CHECK(c.upper_off <= n);
    WS_FUZZ_CHECK(c.upper_off <= wire::kIpv6MaxChainBytes + 2048);
  }
}

}  // namespace

WS_FUZZ_TARGET(ipv6, ipv6_seeds) {
  static Host whole;
  static Host cut;
  if (data.empty()) return;
  const size_t ncuts = data[0] % 4;
  const bool multicast = (data[0] & 4) != 0;
  auto pkt = data.subspan(1);
  check_walk(pkt);
  fuzz::Bytes frame(14 + pkt.size());
  const MacAddr dst = multicast ? kOur.solicited_node().multicast_mac() : kMac;
  wire::emit_ethernet(frame.data(), dst, MacAddr{{0x02, 0, 0, 0, 0, 2}}, wire::kEtherTypeIpv6);
  std::copy(pkt.begin(), pkt.end(), frame.begin() + 14);

  std::array<PacketView::Segment, 4> segs;
  std::span<const uint8_t> f(frame);
  size_t from = 0;
  for (size_t i = 0; i < ncuts; ++i) {
    const size_t at = std::max(from, (i + 1) * f.size() / (ncuts + 1) + (data[0] >> 3) % 7);
    const size_t to = std::min(at, f.size());
    segs[i] = f.subspan(from, to - from);
    from = to;
  }
  segs[ncuts] = f.subspan(from);

  const Instant now = Instant::from_ns(2'000'000'000);
  const uint64_t events = whole.stack.drops().events;
  const uint64_t in = whole.stack.counters().ipv6_in;
  whole.stack.receive(f, RxMeta{}, now);
  cut.stack.receive(PacketView(std::span(segs.data(), ncuts + 1), f.size()), RxMeta{}, now);
  WS_FUZZ_CHECK(whole.stack.drops().count == cut.stack.drops().count);
  const auto& a = whole.stack.counters();
  const auto& b = cut.stack.counters();
  WS_FUZZ_CHECK(a.ipv6_in == b.ipv6_in && a.icmpv6_in == b.icmpv6_in &&
                a.tx_frames == b.tx_frames && a.ndp_adverts_out == b.ndp_adverts_out &&
                a.icmpv6_echo_replies_out == b.icmpv6_echo_replies_out &&
                a.icmpv6_errors_out == b.icmpv6_errors_out);
  // Every frame is taken in or dropped under a reason.
  WS_FUZZ_CHECK(whole.stack.drops().events > events || a.ipv6_in > in);
  // Timers run (neighbour resolution, ageing) and memory stays bounded.
  (void)whole.stack.poll(now + Duration::seconds(10));
  (void)cut.stack.poll(now + Duration::seconds(10));
}
