#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <vector>

#include "stack/core/checksum.hpp"
#include "stack/wire/icmp.hpp"
#include "tests/unit/wire/captured_frames.hpp"

namespace ws::wire {
namespace {

namespace td = ws::testdata;

TEST(Icmp, CapturedEchoRequest) {
  auto m = IcmpView::parse(td::l4_of(td::kIcmpEchoRequest));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->type(), kIcmpEchoRequest);
  EXPECT_EQ(m->code(), 0);
  EXPECT_EQ(m->checksum(), 0x3842);
  EXPECT_EQ(m->echo_id(), 0x2171);
  EXPECT_EQ(m->echo_seq(), 1);
  ASSERT_EQ(m->body().size(), 56u);
  EXPECT_EQ(m->body()[16], 0x10);  // ping's pattern after its 16-byte struct timeval
  EXPECT_EQ(m->body()[55], 0x37);
  EXPECT_EQ(m->bytes().size(), 64u);
  EXPECT_EQ(internet_checksum(m->bytes()), 0);
}

TEST(Icmp, CapturedEchoReply) {
  auto m = IcmpView::parse(td::l4_of(td::kIcmpEchoReply));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->type(), kIcmpEchoReply);
  EXPECT_EQ(m->checksum(), 0x4042);
  EXPECT_EQ(m->echo_id(), 0x2171);
  EXPECT_EQ(m->echo_seq(), 1);
  EXPECT_EQ(internet_checksum(m->bytes()), 0);
}

TEST(Icmp, TruncatedAtEveryLength) {
  auto b = td::l4_of(td::kIcmpEchoRequest);
  for (size_t n = 0; n <= b.size(); ++n) {
    auto m = IcmpView::parse(b.first(n));
    ASSERT_EQ(m.has_value(), n >= IcmpView::kHeaderLen) << n;
    if (m) {
      EXPECT_EQ(m->body().size(), n - 8);
    }
  }
}

TEST(Icmp, EmitReplyReproducesTheKernelsReply) {
  // Build the reply the way the stack does: copy the request's body, then emit the header.
  auto req = *IcmpView::parse(td::l4_of(td::kIcmpEchoRequest));
  std::vector<uint8_t> out(8 + req.body().size());
  std::copy(req.body().begin(), req.body().end(), out.begin() + 8);
  uint32_t rest = (uint32_t{req.echo_id()} << 16) | req.echo_seq();
  emit_icmp(out.data(), kIcmpEchoReply, 0, rest, req.body().size());
  auto want = td::l4_of(td::kIcmpEchoReply);
  ASSERT_EQ(out.size(), want.size());
  EXPECT_TRUE(std::equal(out.begin(), out.end(), want.begin()));
}

TEST(Icmp, EmitOddBodyAndFragNeeded) {
  // Destination unreachable / fragmentation needed quoting an odd-length piece.
  std::vector<uint8_t> out(8 + 27);
  for (size_t i = 8; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 7);
  out[2] = out[3] = 0xee;  // stale checksum must be overwritten
  emit_icmp(out.data(), kIcmpDestUnreachable, kIcmpCodeFragNeeded, 1400, 27);
  auto m = IcmpView::parse(out);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->type(), kIcmpDestUnreachable);
  EXPECT_EQ(m->code(), kIcmpCodeFragNeeded);
  EXPECT_EQ(m->next_hop_mtu(), 1400);
  EXPECT_EQ(load_be16(out.data() + 4), 0);  // unused half of the word
  EXPECT_EQ(internet_checksum(out), 0);
  EXPECT_EQ(m->body().size(), 27u);
}

TEST(Icmp, EmitHeaderOnly) {
  std::array<uint8_t, 8> out{};
  emit_icmp(out.data(), kIcmpEchoRequest, 0, 0xabcd0007, 0);
  auto m = IcmpView::parse(out);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->echo_id(), 0xabcd);
  EXPECT_EQ(m->echo_seq(), 7);
  EXPECT_TRUE(m->body().empty());
  EXPECT_EQ(internet_checksum(out), 0);
}

}  // namespace
}  // namespace ws::wire
