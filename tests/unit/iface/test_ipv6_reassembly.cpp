// IPv6 reassembly: in any order, duplicates, overlaps (RFC 5722), bounds and timeouts;
// and through the stack, a fragmented echo request answered in fragments.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"
#include "stack/iface/ipv6_reassembly.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/icmpv6.hpp"
#include "stack/wire/ipv6.hpp"
#include "tests/support/stack_harness.hpp"

namespace ws::test {
namespace {

const Ipv6Addr kA = *Ipv6Addr::parse("2001:db8::2");
const Ipv6Addr kB = *Ipv6Addr::parse("2001:db8::1");

std::vector<uint8_t> message(size_t n) {
  std::vector<uint8_t> m(n);
  for (size_t i = 0; i < n; ++i) m[i] = static_cast<uint8_t>(i * 13 + 5);
  return m;
}

// One fragment of `msg` (the fragmentable part, upper layer `nh`): [off, off + len).
std::vector<uint8_t> fragment(const std::vector<uint8_t>& msg, uint32_t off, uint32_t len,
                              bool more, uint32_t id = 7, uint8_t nh = wire::kIpProtoIcmpv6,
                              Ipv6Addr src = kA) {
  std::vector<uint8_t> p(40 + 8 + len);
  wire::emit_ipv6(p.data(), wire::Ipv6Repr{src, kB, wire::kIpv6Fragment, 64, 0, 0,
                                           static_cast<uint16_t>(8 + len)});
  p[40] = nh;
  store_be16(p.data() + 42, static_cast<uint16_t>(off | (more ? 1 : 0)));
  store_be32(p.data() + 44, id);
  std::copy(msg.begin() + off, msg.begin() + off + len, p.begin() + 48);
  return p;
}

struct Feed {
  Ipv6Reassembler r;
  DropCounters drops;
  Instant now = Instant::from_ns(1'000'000'000);
  explicit Feed(Ipv6ReassemblyConfig c = {}) : r(c) {}
  std::optional<std::vector<uint8_t>> in(const std::vector<uint8_t>& p) {
    wire::Ipv6Chain c;
    const PacketView v{std::span<const uint8_t>(p)};
    EXPECT_FALSE(wire::walk_ipv6_chain(v.tail(40), p[6], false, c));
    EXPECT_TRUE(c.fragment);
    auto out = r.input(v, *c.fragment, now, drops);
    if (!out) return std::nullopt;
    return std::vector<uint8_t>(out->begin(), out->end());
  }
};

void expect_whole(const std::vector<uint8_t>& got, const std::vector<uint8_t>& msg) {
  ASSERT_EQ(got.size(), 40 + msg.size());
  auto ip = *wire::Ipv6View::parse(got);
  EXPECT_EQ(ip.payload_len(), msg.size());
  EXPECT_EQ(ip.next_header(), wire::kIpProtoIcmpv6);  // the Fragment header is gone
  EXPECT_EQ(ip.src(), kA);
  EXPECT_TRUE(std::equal(msg.begin(), msg.end(), got.begin() + 40));
}

TEST(Ipv6Reassembly, InOrderAndReversed) {
  const auto msg = message(3000);
  Feed f;
  EXPECT_FALSE(f.in(fragment(msg, 0, 1448, true)));
  EXPECT_FALSE(f.in(fragment(msg, 1448, 1448, true)));
  auto whole = f.in(fragment(msg, 2896, 104, false));
  ASSERT_TRUE(whole);
  expect_whole(*whole, msg);
  EXPECT_FALSE(f.in(fragment(msg, 2896, 104, false, 8)));
  EXPECT_FALSE(f.in(fragment(msg, 1448, 1448, true, 8)));
  whole = f.in(fragment(msg, 0, 1448, true, 8));
  ASSERT_TRUE(whole);
  expect_whole(*whole, msg);
  EXPECT_EQ(f.r.entries(), 0u);
  EXPECT_EQ(f.drops.total(), 0u);
  EXPECT_EQ(f.r.reassembled(), 2u);
}

TEST(Ipv6Reassembly, ExactDuplicateIsIgnoredOverlapDiscardsThePacket) {
  const auto msg = message(2000);
  Feed f;
  EXPECT_FALSE(f.in(fragment(msg, 0, 1000, true)));
  EXPECT_FALSE(f.in(fragment(msg, 0, 1000, true)));  // duplicate: kept going
  EXPECT_TRUE(f.in(fragment(msg, 1000, 1000, false)));
  // RFC 5722: an overlap drops what was held and every later fragment of the packet.
  EXPECT_FALSE(f.in(fragment(msg, 0, 1000, true, 9)));
  EXPECT_FALSE(f.in(fragment(msg, 992, 1008, false, 9)));
  EXPECT_EQ(f.drops.get(DropReason::kIpv6ReassemblyOverlap), 2u);
  EXPECT_FALSE(f.in(fragment(msg, 1000, 1000, false, 9)));
  EXPECT_EQ(f.drops.get(DropReason::kIpv6ReassemblyOverlap), 3u);
  // A different "last" fragment end, and data past the end: overlaps too.
  EXPECT_FALSE(f.in(fragment(msg, 1000, 1000, false, 10)));
  EXPECT_FALSE(f.in(fragment(msg, 1000, 992, false, 10)));
  EXPECT_EQ(f.drops.get(DropReason::kIpv6ReassemblyOverlap), 5u);
}

TEST(Ipv6Reassembly, Bounds) {
  const auto msg = message(4096);
  Ipv6ReassemblyConfig c;
  c.max_entries = 2;
  c.max_fragments = 3;
  Feed f(c);
  for (uint32_t i = 0; i < 3; ++i) EXPECT_FALSE(f.in(fragment(msg, i * 8, 8, true)));
  EXPECT_FALSE(f.in(fragment(msg, 24, 8, true)));
  EXPECT_EQ(f.drops.get(DropReason::kIpv6ReassemblyTooManyFragments), 4u);
  EXPECT_FALSE(f.in(fragment(msg, 0, 8, true, 20)));
  EXPECT_FALSE(f.in(fragment(msg, 0, 8, true, 21)));  // the table: id 7 (discarded), 20
  EXPECT_EQ(f.drops.get(DropReason::kIpv6ReassemblyTableFull), 1u);
  // Past 65535 bytes of payload (RFC 8200 4.5).
  std::vector<uint8_t> big(65535 + 16, 1);
  EXPECT_FALSE(f.in(fragment(big, 65528, 16, false, 20)));
  EXPECT_EQ(f.drops.get(DropReason::kIpv6ReassemblyTooLarge), 2u);  // it and the one held
}

TEST(Ipv6Reassembly, TimesOutAfterSixtySeconds) {
  const auto msg = message(2000);
  Feed f;
  EXPECT_FALSE(f.in(fragment(msg, 0, 1000, true)));
  EXPECT_EQ(f.r.next_deadline(), f.now + Duration::seconds(60));
  f.r.poll(f.now + Duration::seconds(59), f.drops);
  EXPECT_EQ(f.r.entries(), 1u);
  f.r.poll(f.now + Duration::seconds(60), f.drops);
  EXPECT_EQ(f.r.entries(), 0u);
  EXPECT_EQ(f.drops.get(DropReason::kIpv6ReassemblyTimeout), 1u);
  EXPECT_EQ(f.r.next_deadline(), Instant::never());
}

// Through the stack: a 3000-byte echo request in three fragments is answered with a
// 3000-byte reply in fragments that reassemble to the request's data.
TEST(Ipv6Reassembly, FragmentedEchoIsAnsweredInFragments) {
  InterfaceConfig ic = default_interface();
  ic.addresses6 = {Ipv6Cidr{kB, 64}};
  ic.dad_transmits = 0;
  StackHarness h(FakePacketIo::Options{}, StackConfig{}, ic);
  h.stack.start(h.now());
  auto ns = std::vector<uint8_t>(32, 0);
  ns[0] = wire::kIcmpv6NeighborSolicit;
  kB.to_bytes(ns.data() + 8);
  wire::emit_ndp_link_option(ns.data() + 24, wire::kNdpOptSourceLinkAddr, kPeerMac);
  wire::fill_icmpv6_checksum(ns, kA, kB);
  auto frame = [](const std::vector<uint8_t>& ip) {
    std::vector<uint8_t> f(14 + ip.size());
    wire::emit_ethernet(f.data(), kOurMac, kPeerMac, wire::kEtherTypeIpv6);
    std::copy(ip.begin(), ip.end(), f.begin() + 14);
    return f;
  };
  std::vector<uint8_t> ns_ip(40 + ns.size());
  wire::emit_ipv6(ns_ip.data(), wire::Ipv6Repr{kA, kB, wire::kIpProtoIcmpv6, 255, 0, 0, 32});
  std::copy(ns.begin(), ns.end(), ns_ip.begin() + 40);
  h.rx(frame(ns_ip));
  h.io.clear_sent();

  auto req = message(3000);
  req[0] = wire::kIcmpv6EchoRequest;
  req[1] = 0;
  wire::fill_icmpv6_checksum(req, kA, kB);
  h.rx(frame(fragment(req, 1448, 1448, true)));
  h.rx(frame(fragment(req, 2896, 104, false)));
  EXPECT_TRUE(h.io.take_sent().empty());
  h.rx(frame(fragment(req, 0, 1448, true)));
  auto sent = h.io.take_sent();
  ASSERT_EQ(sent.size(), 3u);  // 1448 + 1448 + 104 at MTU 1500
  std::vector<uint8_t> reply(3000);
  size_t got = 0;
  for (const auto& s : sent) {
    ASSERT_LE(s.bytes.size(), 1514u);
    auto ip = *wire::Ipv6View::parse(std::span(s.bytes).subspan(14));
    EXPECT_EQ(ip.next_header(), wire::kIpv6Fragment);
    EXPECT_EQ(ip.dst(), kA);
    const uint8_t* fh = s.bytes.data() + 14 + 40;
    EXPECT_EQ(fh[0], wire::kIpProtoIcmpv6);
    const uint32_t off = load_be16(fh + 2) & 0xfff8;
    const uint32_t n = ip.payload_len() - 8;
    ASSERT_LE(off + n, reply.size());
    std::copy(fh + 8, fh + 8 + n, reply.begin() + off);
    got += n;
  }
  ASSERT_EQ(got, 3000u);
  EXPECT_EQ(reply[0], wire::kIcmpv6EchoReply);
  EXPECT_TRUE(std::equal(req.begin() + 4, req.end(), reply.begin() + 4));
  uint32_t sum = ipv6_pseudo_sum(kB, kA, wire::kIpProtoIcmpv6, 3000);
  EXPECT_EQ(csum_fold(csum_partial(reply, sum)), 0);
  EXPECT_EQ(h.total_drops(), 0u);
  EXPECT_TRUE(h.io.no_leaks());
}

}  // namespace
}  // namespace ws::test
