// A client split over cores reports as one (dataplane/client_reports.hpp).
#include "dataplane/client_reports.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "stack/core/json.hpp"
#include "tests/support/temp_dir.hpp"

namespace ws::dp {
namespace {

ClientReport progress(uint64_t msgs, double rate, double secs) {
  ClientReport r;
  r.seconds = secs;
  r.messages = msgs;
  r.bytes = msgs * 100;
  r.messages_per_second = rate;
  r.connections = 2;
  return r;
}

TEST(ClientShare, DividesTotalsWithTheRemainderFirst) {
  EXPECT_EQ((ClientShare{0, 2}.of(65)), 33u);
  EXPECT_EQ((ClientShare{1, 2}.of(65)), 32u);
  EXPECT_EQ((ClientShare{2, 3}.of(0)), 0u);
  uint64_t sum = 0;
  for (uint32_t i = 0; i < 7; ++i) sum += ClientShare{i, 7}.of(1000);
  EXPECT_EQ(sum, 1000u);
}

TEST(ClientReports, ProgressAddsUpOnTheReporterOnly) {
  ClientReports reps(2, 2);
  reps.join(1, 1);
  reps.join(1, 0);
  EXPECT_TRUE(reps.reporter(1, 0));
  EXPECT_FALSE(reps.reporter(1, 1));
  ClientReport out;
  EXPECT_FALSE(reps.merged(1, out)) << "nothing posted yet";
  reps.post(1, 1, progress(300, 30, 1.0), nullptr);
  EXPECT_FALSE(reps.merged(1, out)) << "progress is due when the reporter posts its own";
  reps.post(1, 0, progress(500, 50, 1.0), nullptr);
  ASSERT_TRUE(reps.merged(1, out));
  EXPECT_FALSE(out.final);
  EXPECT_EQ(out.messages, 800u);
  EXPECT_DOUBLE_EQ(out.messages_per_second, 80.0);
  EXPECT_EQ(out.connections, 4u);
  EXPECT_FALSE(reps.merged(1, out)) << "once per reporter progress";
  EXPECT_FALSE(reps.all_final());
}

TEST(ClientReports, FinalWaitsForEveryShareAndMergesRoundTrips) {
  ClientReports reps(1, 2);
  reps.join(0, 0);
  reps.join(0, 1);
  LatencyHistogram fast, slow;
  for (int i = 0; i < 90; ++i) fast.record(1000);
  for (int i = 0; i < 10; ++i) slow.record(100000);
  ClientReport a = progress(90, 0, 2.0);
  a.final = true;
  a.set_rtt(fast);
  reps.post(0, 0, a, &fast);
  ClientReport out;
  EXPECT_FALSE(reps.merged(0, out)) << "core 1 has not finished";
  ClientReport b = progress(10, 0, 4.0);
  b.final = true;
  b.errors = 1;
  b.set_rtt(slow);
  reps.post(0, 1, b, &slow);
  ASSERT_TRUE(reps.merged(0, out));
  EXPECT_TRUE(out.final);
  EXPECT_EQ(out.messages, 100u);
  EXPECT_EQ(out.errors, 1u);
  EXPECT_DOUBLE_EQ(out.seconds, 4.0) << "the longest share";
  EXPECT_DOUBLE_EQ(out.messages_per_second, 25.0) << "totals over the longest share's time";
  ASSERT_TRUE(out.has_rtt);
  EXPECT_LE(out.rtt_ns[0], 1100u) << "p50 from the merged histogram";
  EXPECT_GE(out.rtt_ns[2], 90000u) << "p99 from the merged histogram";
  EXPECT_FALSE(reps.merged(0, out)) << "the final report once";
  EXPECT_TRUE(reps.all_final());
}

TEST(ClientReports, NoClientIsNeverAllFinal) {
  ClientReports reps(3, 2);
  EXPECT_FALSE(reps.all_final());
}

// Service names are the user's text: quotes, backslashes and control characters are
// escaped, so the report stays JSON whatever the name.
TEST(ClientReportJson, EscapesTheServiceName) {
  const std::string name =
      "cli\"ent\\one\n\t\x01"
      "end";
  ClientReport r = progress(1000, 0, 2.0);
  r.final = true;
  r.bits_per_second = 1e6;
  r.has_rtt = true;
  r.rtt_ns[0] = 1500;
  r.rtt_ns[4] = 9000;
  const ClientReportInfo info{name, "client", "tcp", 64};
  const std::string text = client_report_json(info, r);
  EXPECT_NE(text.find(R"("service":"cli\"ent\\one\n\t\u0001end")"), std::string::npos) << text;
  const std::optional<json::Json> doc = json::parse(text);
  ASSERT_TRUE(doc.has_value()) << text;
  EXPECT_EQ(json::string_or(json::member(*doc, "service")), name);
  EXPECT_EQ(json::string_or(json::member(*doc, "kind")), "client");
  EXPECT_EQ(json::number_or(*doc, "messages", 0), 1000);
  EXPECT_EQ(json::number_or(*doc, "message_size", 0), 64);
  EXPECT_EQ(json::number_or(*doc, "bits_per_second", 0), 1e6);
  const json::Json* rtt = json::member(*doc, "rtt_us");
  ASSERT_NE(rtt, nullptr);
  EXPECT_EQ(json::number_or(*rtt, "p50", 0), 1.5);
  EXPECT_EQ(json::number_or(*rtt, "max", 0), 9.0);

  test::TempDir dir;
  ASSERT_TRUE(write_client_report(dir.file("r.json"), info, r));
  std::ifstream f(dir.file("r.json"));
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(f), {}), text + "\n");
  EXPECT_FALSE(write_client_report(dir.file("missing/r.json"), info, r));
}

}  // namespace
}  // namespace ws::dp
