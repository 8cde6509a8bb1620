// Outbound sequence numbers and their durable reservation: restarts continue above every
// number that could have been used, a bad record stops the SA, the space never wraps.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "stack/ipsec/seq_store.hpp"
#include "tests/support/temp_dir.hpp"

namespace ws::ipsec {
namespace {

using Take = OutboundSequence::Take;

const SeqRecordId kId{0x1001, ws::Ipv4Addr::from_octets(10, 77, 0, 2)};

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

uint64_t take(OutboundSequence& s) {
  EspSeq out;
  EXPECT_EQ(s.take(out), Take::ok);
  return out.value();
}

TEST(OutboundSequence, HandsOutOnlyWhatWasGranted) {
  OutboundSequence s(false);
  EspSeq out;
  EXPECT_EQ(s.take(out), Take::wait);
  s.grant(1, 4);
  EXPECT_EQ(take(s), 1u);
  EXPECT_EQ(take(s), 2u);
  EXPECT_EQ(take(s), 3u);
  EXPECT_EQ(s.take(out), Take::wait);
  s.grant(1, 6);  // extending never moves `next` back
  EXPECT_EQ(take(s), 4u);
}

TEST(OutboundSequence, StopsAtTheEndOfTheSpace) {
  OutboundSequence s(false);
  EXPECT_EQ(s.limit(), uint64_t{1} << 32);
  s.grant(0xfffffffeu, uint64_t{1} << 32);
  EXPECT_EQ(take(s), 0xfffffffeu);
  EXPECT_EQ(take(s), 0xffffffffu);
  EspSeq out;
  EXPECT_EQ(s.take(out), Take::exhausted);
  EXPECT_EQ(s.take(out), Take::exhausted);
  EXPECT_TRUE(s.exhausted());
  s.grant(1, uint64_t{1} << 40);  // nothing can extend past the limit
  EXPECT_EQ(s.take(out), Take::exhausted);

  OutboundSequence e(true);
  e.grant(UINT64_MAX - 2, UINT64_MAX);
  EXPECT_EQ(take(e), UINT64_MAX - 2);
  EXPECT_EQ(take(e), UINT64_MAX - 1);
  EXPECT_EQ(e.take(out), Take::exhausted);
}

class Store : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.ok()); }
  ws::test::TempDir dir_;
};

TEST_F(Store, FirstStartBeginsAtOneAndRecordsTheNextBlock) {
  SeqStore store(dir_.path(), 16);
  OutboundSequence s(false);
  std::string err;
  ASSERT_TRUE(store.start(kId, s, err)) << err;
  EXPECT_EQ(store.path(kId), dir_.path() + "/out-00001001-10.77.0.2.seq");
  EXPECT_EQ(read(store.path(kId)), "wirespeed esp sequence v1\nnext 17\n");
  EXPECT_EQ(take(s), 1u);
}

TEST_F(Store, RefillExtendsWithoutSkippingAndRestartsContinueAbove) {
  SeqStore store(dir_.path(), 16);
  std::string err;
  uint64_t last = 0;
  {
    OutboundSequence s(false);
    ASSERT_TRUE(store.start(kId, s, err)) << err;
    for (int i = 0; i < 40; ++i) {
      const uint64_t n = take(s);
      EXPECT_EQ(n, last + 1);  // consecutive across refills
      last = n;
      ASSERT_TRUE(store.refill(kId, s, err)) << err;
      // The record is always above every number handed out.
      const std::string rec = read(store.path(kId));
      EXPECT_GT(std::stoull(rec.substr(rec.find("next ") + 5)), last);
    }
  }
  // A restart (the process died after using `last`) continues above it.
  OutboundSequence again(false);
  ASSERT_TRUE(store.start(kId, again, err)) << err;
  const uint64_t first = take(again);
  EXPECT_GT(first, last);
  EXPECT_LE(first, last + 2 * 16);  // it wastes at most the reserved blocks
  // Each SA has its own record.
  OutboundSequence other(false);
  ASSERT_TRUE(store.start({0x2002, kId.remote}, other, err)) << err;
  EXPECT_EQ(take(other), 1u);
}

TEST_F(Store, NearTheEndItStopsAndStaysStoppedAfterRestart) {
  SeqStore store(dir_.path(), 1000);
  dir_.write("out-00001001-10.77.0.2.seq", "wirespeed esp sequence v1\nnext 4294967290\n");
  std::string err;
  OutboundSequence s(false);
  ASSERT_TRUE(store.start(kId, s, err)) << err;
  for (uint64_t n = 4294967290u; n <= 0xffffffffu; ++n) EXPECT_EQ(take(s), n);
  EspSeq out;
  EXPECT_EQ(s.take(out), Take::exhausted);
  EXPECT_TRUE(store.refill(kId, s, err));  // nothing to reserve
  EXPECT_EQ(read(store.path(kId)), "wirespeed esp sequence v1\nnext 4294967296\n");
  OutboundSequence again(false);
  ASSERT_TRUE(store.start(kId, again, err)) << err;
  EXPECT_EQ(again.take(out), Take::exhausted);
}

TEST_F(Store, AnUnreadableRecordStopsTheSaInsteadOfRestartingAtOne) {
  SeqStore store(dir_.path(), 16);
  std::string err;
  for (const char* bad :
       {"", "garbage\n", "wirespeed esp sequence v1\nnext \n",
        "wirespeed esp sequence v1\nnext 12x\n", "wirespeed esp sequence v1\nnext 0\n",
        "wirespeed esp sequence v1\nnext 99999999999999999999999\n",
        "wirespeed esp sequence v1\nnext 17"}) {
    SCOPED_TRACE(bad);
    dir_.write("out-00001001-10.77.0.2.seq", bad);
    OutboundSequence s(false);
    EXPECT_FALSE(store.start(kId, s, err));
    EXPECT_NE(err.find(store.path(kId)), std::string::npos) << err;
    EspSeq out;
    EXPECT_EQ(s.take(out), Take::wait);  // nothing granted: nothing sent
  }
}

TEST_F(Store, AMissingDirectoryIsAnError) {
  SeqStore store(dir_.file("absent"), 16);
  OutboundSequence s(false);
  std::string err;
  EXPECT_FALSE(store.start(kId, s, err));
  EXPECT_NE(err.find("cannot create"), std::string::npos) << err;
}

}  // namespace
}  // namespace ws::ipsec
