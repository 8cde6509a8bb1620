// TxPipeline::reset(): a pipeline reused for the next connection of the same owner (the
// ping client's reconnects, the echo's pooled connection states) behaves as a new one and
// allocates nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "stack/codec/framing.hpp"
#include "stack/pipeline/tx_pipeline.hpp"

namespace ws::pipeline {
namespace {

Instant at_us(int64_t us) { return Instant::from_ns(0) + Duration::micros(us); }

// Takes up to `budget` bytes available at `now`; returns them.
std::vector<uint8_t> take(TxPipeline& p, Instant now, size_t budget = SIZE_MAX) {
  std::vector<uint8_t> out;
  p.drain(now, [&](std::span<const uint8_t> s) {
    const size_t n = std::min(s.size(), budget);
    budget -= n;
    out.insert(out.end(), s.begin(), s.begin() + static_cast<ptrdiff_t>(n));
    return n;
  });
  return out;
}

TEST(TxPipelineReset, ActsAsNewAndKeepsItsSpareBatch) {
  PipelineParams params;
  params.initial_mss = 536;
  TxPipeline p(params);
  std::vector<uint8_t> msg(64, 0xab);
  // First connection: one message pulled, one left queued (half taken), batching entered.
  p.set_mss(1448);
  ASSERT_EQ(p.push(msg, Priority::kData, at_us(0)).status, PushStatus::kOk);
  EXPECT_EQ(take(p, at_us(0)).size(), 68u);
  p.set_in_flight(1 << 20);  // far more than a batch in flight: batching mode
  ASSERT_EQ(p.push(msg, Priority::kData, at_us(1)).status, PushStatus::kOk);
  EXPECT_TRUE(p.batching());
  EXPECT_EQ(p.counters().batches_allocated, 1u);

  p.reset();
  // As new: nothing queued, initial MSS, not batching, counters from zero, but the batch
  // kept as the spare (counted live, not in use).
  EXPECT_EQ(p.queued_bytes(), 0u);
  EXPECT_EQ(p.mss(), 536u);
  EXPECT_EQ(p.batch_limit(), batch_limit(536, kDefaultMaxBatchBytes));
  EXPECT_FALSE(p.batching());
  EXPECT_EQ(p.in_flight(), 0u);
  EXPECT_EQ(p.poll(at_us(2)), Instant::never());
  EXPECT_EQ(p.counters().messages, 0u);
  EXPECT_EQ(p.counters().batches_allocated, 0u);
  EXPECT_EQ(p.counters().batches_live, 1u);
  EXPECT_EQ(p.counters().batches_in_use, 0u);

  // Second connection: the message goes out at once, whole, from the reused batch.
  std::vector<uint8_t> msg2(100);
  fill_pattern(0, 0, msg2);
  const PushResult r = p.push(msg2, Priority::kData, at_us(3));
  EXPECT_EQ(r.status, PushStatus::kOk);
  EXPECT_TRUE(r.notify);
  const std::vector<uint8_t> out = take(p, at_us(3));
  ASSERT_EQ(out.size(), 104u);
  EXPECT_EQ(out[3], 100u);  // the length32 header of the new message, not the old one's
  EXPECT_TRUE(std::equal(msg2.begin(), msg2.end(), out.begin() + 4));
  EXPECT_EQ(p.counters().batches_allocated, 0u);
  EXPECT_EQ(p.counters().spare_reuses, 1u);
}

// Batches beyond params.spare_batches are freed by reset(), not kept.
TEST(TxPipelineReset, FreesWhatTheSparesDoNotKeep) {
  PipelineParams params;
  params.initial_mss = 1000;
  params.max_batch_bytes = 4000;
  params.spare_batches = 1;
  TxPipeline p(params);
  std::vector<uint8_t> big(20000, 1);
  ASSERT_EQ(p.push(big, Priority::kData, at_us(0)).status, PushStatus::kOk);
  EXPECT_GE(p.counters().batches_live, 5u);
  p.reset();
  EXPECT_EQ(p.counters().batches_live, 1u);
  EXPECT_EQ(p.queued_bytes(), 0u);
}

// reset() goes back to the batch limit of params.initial_mss (kept from the construction),
// and the next set_mss() sizes batches after the new connection's MSS again.
TEST(TxPipelineReset, RestoresTheInitialMssLimit) {
  for (bool multiple : {true, false}) {
    PipelineParams params;
    params.initial_mss = 1000;
    params.max_batch_bytes = 4500;
    params.mss_multiple = multiple;
    TxPipeline p(params);
    const uint32_t initial = p.batch_limit();
    EXPECT_EQ(initial, multiple ? 4000u : 4500u);
    p.set_mss(1448);
    EXPECT_EQ(p.batch_limit(), multiple ? 4344u : 4500u);
    std::vector<uint8_t> msg(3000, 7);
    ASSERT_EQ(p.push(msg, Priority::kData, at_us(0)).status, PushStatus::kOk);  // a tail open
    p.reset();
    EXPECT_EQ(p.mss(), 1000u);
    EXPECT_EQ(p.batch_limit(), initial);
    p.set_mss(1448);
    EXPECT_EQ(p.batch_limit(), multiple ? 4344u : 4500u);
    p.set_mss(1000);
    EXPECT_EQ(p.batch_limit(), initial);
  }
}

}  // namespace
}  // namespace ws::pipeline
