// Packet capture without a data plane: the per-core rings (wrap, full, a concurrent
// producer), the pcapng writer's blocks as a reader parses them, the reader's session
// (lock, request, drain, dropped copies) and the capture command's options.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "control/capture/pcapng.hpp"
#include "control/capture/ring.hpp"
#include "control/capture/segment.hpp"
#include "control/capture/session.hpp"
#include "control/cli/options.hpp"
#include "test_util.hpp"

namespace ws::capture {
namespace {

struct TestRing {
  explicit TestRing(uint64_t bytes) : data(bytes), writer(&header, data.data(), bytes) {}
  RingHeader header{};
  std::vector<uint8_t> data;
  RingWriter writer;
  RingReader reader() { return RingReader(&header, data.data(), data.size()); }
};

bool put(RingWriter& w, uint32_t len, uint8_t fill, uint16_t port = 0) {
  Record* rec = nullptr;
  uint8_t* out = w.reserve(len, rec);
  if (out == nullptr) return false;
  std::memset(out, fill, len);
  rec->wirelen = len;
  rec->port = port;
  rec->dir = Direction::kRx;
  rec->reason = kNoReason;
  w.commit();
  return true;
}

TEST(CaptureRing, RecordsComeBackInOrderAcrossManyWraps) {
  TestRing r(4096);
  RingReader reader = r.reader();
  uint8_t next_fill = 0;
  uint8_t expect_fill = 0;
  for (int round = 0; round < 2000; ++round) {
    // Sizes that leave every kind of gap at the ring's end, pad records included.
    uint32_t len = 1 + static_cast<uint32_t>(round * 37 % 700);
    ASSERT_TRUE(put(r.writer, len, next_fill++)) << round;
    const Record* rec = reader.peek();
    ASSERT_NE(rec, nullptr);
    ASSERT_EQ(rec->caplen, len);
    ASSERT_EQ(rec->wirelen, len);
    const uint8_t* b = RingReader::bytes_of(rec);
    for (uint32_t i = 0; i < len; ++i) ASSERT_EQ(b[i], expect_fill) << round;
    ++expect_fill;
    reader.release(rec);
    EXPECT_EQ(reader.peek(), nullptr);
  }
  EXPECT_EQ(r.header.copied.load(), 2000u);
  EXPECT_EQ(r.header.dropped.load(), 0u);
}

TEST(CaptureRing, AFullRingDropsAndCountsThenResumes) {
  TestRing r(4096);
  int written = 0;
  while (put(r.writer, 200, 1)) ++written;
  EXPECT_EQ(written, 4096 / static_cast<int>(record_size(200)));
  EXPECT_FALSE(put(r.writer, 200, 1));
  EXPECT_EQ(r.header.dropped.load(), 2u);
  RingReader reader = r.reader();
  const Record* rec = reader.peek();
  ASSERT_NE(rec, nullptr);
  reader.release(rec);
  EXPECT_TRUE(put(r.writer, 200, 2));  // room again once the reader moved on
  int read = 0;
  while (const Record* x = reader.peek()) {
    reader.release(x);
    ++read;
  }
  EXPECT_EQ(read, written);
}

TEST(CaptureRing, ConcurrentProducerLosesNothingUncounted) {
  TestRing r(1 << 16);
  constexpr uint32_t kFrames = 200000;
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (uint32_t i = 0; i < kFrames; ++i) {
      Record* rec = nullptr;
      uint32_t len = 8 + i % 300;
      uint8_t* out = r.writer.reserve(len, rec);
      if (out == nullptr) continue;
      std::memcpy(out, &i, sizeof i);
      rec->wirelen = len;
      rec->dir = Direction::kTx;
      r.writer.commit();
    }
    done.store(true);
  });
  RingReader reader = r.reader();
  uint64_t got = 0;
  int64_t last = -1;
  bool ordered = true;
  while (true) {
    bool finished = done.load();
    while (const Record* rec = reader.peek()) {
      uint32_t seq = 0;
      std::memcpy(&seq, RingReader::bytes_of(rec), sizeof seq);
      ordered = ordered && static_cast<int64_t>(seq) > last && rec->caplen == 8 + seq % 300;
      last = seq;
      reader.release(rec);
      ++got;
    }
    if (finished) break;
  }
  producer.join();
  EXPECT_TRUE(ordered);
  EXPECT_EQ(got + r.header.dropped.load(), kFrames);
  EXPECT_EQ(got, r.header.copied.load());
}

// A minimal pcapng reader: the blocks' types and bodies, checking lengths on the way.
struct Block {
  uint32_t type;
  std::vector<uint8_t> body;
};

std::vector<Block> read_blocks(const std::vector<uint8_t>& f) {
  std::vector<Block> out;
  size_t at = 0;
  while (at + 12 <= f.size()) {
    uint32_t type = 0, len = 0, trailer = 0;
    std::memcpy(&type, f.data() + at, 4);
    std::memcpy(&len, f.data() + at + 4, 4);
    EXPECT_EQ(len % 4, 0u);
    EXPECT_LE(at + len, f.size());
    if (len % 4 != 0 || at + len > f.size() || len < 12) break;
    std::memcpy(&trailer, f.data() + at + len - 4, 4);
    EXPECT_EQ(trailer, len);
    out.push_back({type, std::vector<uint8_t>(f.begin() + at + 8, f.begin() + at + len - 4)});
    at += len;
  }
  EXPECT_EQ(at, f.size());
  return out;
}

// The options of a block body from `from`: code -> value.
std::vector<std::pair<uint16_t, std::string>> options(const std::vector<uint8_t>& b, size_t from) {
  std::vector<std::pair<uint16_t, std::string>> out;
  while (from + 4 <= b.size()) {
    uint16_t code = 0, len = 0;
    std::memcpy(&code, b.data() + from, 2);
    std::memcpy(&len, b.data() + from + 2, 2);
    if (code == 0) break;
    out.emplace_back(code, std::string(b.begin() + from + 4, b.begin() + from + 4 + len));
    from += 4 + (len + 3u) / 4 * 4;
  }
  return out;
}

std::vector<uint8_t> slurp(FILE* f) {
  std::fflush(f);
  std::vector<uint8_t> data(static_cast<size_t>(std::ftell(f)));
  std::rewind(f);
  EXPECT_EQ(std::fread(data.data(), 1, data.size(), f), data.size());
  return data;
}

TEST(Pcapng, BlocksAsAReaderSeesThem) {
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  PcapngWriter w(f, "test");
  EXPECT_EQ(w.add_interface("p0/0", "port p0 queue 0, MTU 1500", 65535), 0u);
  EXPECT_EQ(w.add_interface("p0/1", "port p0 queue 1, MTU 1500", 65535), 1u);
  const uint8_t frame[61] = {1, 2, 3};
  w.packet(1, 1'700'000'000'123'456'789ull, frame, sizeof frame, 1514, PacketDir::kOutbound,
           "tcp_bad_checksum");
  w.packet(0, 5, frame, 14, 14, PacketDir::kInbound, "");
  w.statistics(0, 6, 1, 3);
  EXPECT_TRUE(w.ok());
  auto blocks = read_blocks(slurp(f));
  std::fclose(f);
  ASSERT_EQ(blocks.size(), 6u);
  EXPECT_EQ(blocks[0].type, 0x0A0D0D0Au);
  uint32_t bom = 0;
  std::memcpy(&bom, blocks[0].body.data(), 4);
  EXPECT_EQ(bom, 0x1A2B3C4Du);
  // Interface: Ethernet, snaplen, name and nanosecond resolution.
  const Block& idb = blocks[2];
  EXPECT_EQ(idb.type, 1u);
  uint16_t linktype = 0;
  std::memcpy(&linktype, idb.body.data(), 2);
  EXPECT_EQ(linktype, 1);
  auto io = options(idb.body, 8);
  ASSERT_EQ(io.size(), 3u);
  EXPECT_EQ(io[0], (std::pair<uint16_t, std::string>{2, "p0/1"}));
  EXPECT_EQ(io[2], (std::pair<uint16_t, std::string>{9, std::string(1, '\x09')}));
  // Enhanced packet: interface, split timestamp, lengths, padded data, flags, comment.
  const Block& epb = blocks[3];
  EXPECT_EQ(epb.type, 6u);
  uint32_t v[5];
  std::memcpy(v, epb.body.data(), sizeof v);
  EXPECT_EQ(v[0], 1u);
  EXPECT_EQ((uint64_t{v[1]} << 32) | v[2], 1'700'000'000'123'456'789ull);
  EXPECT_EQ(v[3], 61u);
  EXPECT_EQ(v[4], 1514u);
  EXPECT_EQ(epb.body[20], 1);
  auto eo = options(epb.body, 20 + 64);
  ASSERT_EQ(eo.size(), 2u);
  EXPECT_EQ(eo[0].first, 2);
  EXPECT_EQ(eo[0].second, std::string("\x02\0\0\0", 4));
  EXPECT_EQ(eo[1], (std::pair<uint16_t, std::string>{1, "tcp_bad_checksum"}));
  EXPECT_EQ(blocks[5].type, 5u);  // statistics
}

TEST(Pcapng, AFailedWriteIsReported) {
  FILE* f = std::fopen("/dev/full", "w");
  ASSERT_NE(f, nullptr);
  std::setvbuf(f, nullptr, _IONBF, 0);
  PcapngWriter w(f, "test");
  EXPECT_FALSE(w.ok());
  std::fclose(f);
}

class CaptureSession : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ =
        (std::filesystem::temp_directory_path() / ("ws-capture-test-" + std::to_string(::getpid())))
            .string();
    std::string error;
    ASSERT_TRUE(segment_.create(path_, 2, 8192, {{"p0", 1500, 2, 2}, {"p1", 9000, 1, 1}}, error))
        << error;
  }
  void TearDown() override { segment_.remove(); }

  RingWriter writer(uint32_t core) {
    return RingWriter(segment_.ring(core), segment_.ring_data(core), 8192);
  }

  std::string path_;
  Segment segment_;
};

TEST_F(CaptureSession, ArmDrainDisarm) {
  Session s;
  std::string error;
  ASSERT_TRUE(s.open(path_, error)) << error;
  EXPECT_EQ(s.port_index("p1"), 1);
  EXPECT_EQ(s.port_index("nope"), -1);
  EXPECT_EQ(segment_.header()->armed.load(), 0u);
  Request req;
  req.what = kRx | kDrops;
  req.port = 1;
  req.snaplen = 128;
  // Left over from an earlier request: discarded at arm().
  RingWriter w0 = writer(0);
  ASSERT_TRUE(put(w0, 10, 9));
  s.arm(req);
  EXPECT_EQ(segment_.header()->armed.load(), 1u);
  EXPECT_EQ(segment_.header()->request.port, 1u);
  EXPECT_EQ(segment_.header()->request.snaplen, 128u);
  RingWriter w1 = writer(1);
  ASSERT_TRUE(put(w0, 20, 1, 1));
  ASSERT_TRUE(put(w1, 30, 2, 1));
  uint64_t beat = segment_.header()->reader_beat.load();
  std::vector<uint32_t> lens;
  size_t n = s.drain([&](const Record& r, const uint8_t* b) {
    lens.push_back(r.caplen);
    EXPECT_EQ(b[0], r.caplen == 20 ? 1 : 2);
  });
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(lens, (std::vector<uint32_t>{20, 30}));
  EXPECT_GT(segment_.header()->reader_beat.load(), beat);
  while (put(w1, 1000, 3)) {
  }
  EXPECT_EQ(s.dropped_copies(), 1u);
  s.disarm();
  EXPECT_EQ(segment_.header()->armed.load(), 0u);
}

TEST_F(CaptureSession, OneCaptureAtATime) {
  Session first;
  std::string error;
  ASSERT_TRUE(first.open(path_, error)) << error;
  Session second;
  EXPECT_FALSE(second.open(path_, error));
  EXPECT_NE(error.find("another capture is running"), std::string::npos) << error;
}

TEST(CaptureSegment, MissingOrForeignFilesAreNamed) {
  Session s;
  std::string error;
  EXPECT_FALSE(s.open("/nonexistent/wirespeed.capture", error));
  EXPECT_NE(error.find("is the data plane running"), std::string::npos) << error;
  std::string junk = std::filesystem::temp_directory_path() / "ws-capture-junk";
  FILE* f = std::fopen(junk.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::vector<char> zeros(8192, 0);
  std::fwrite(zeros.data(), 1, zeros.size(), f);
  std::fclose(f);
  Session t;
  EXPECT_FALSE(t.open(junk, error));
  EXPECT_NE(error.find("not a capture segment"), std::string::npos) << error;
  std::filesystem::remove(junk);
}

}  // namespace
}  // namespace ws::capture

namespace ws::cli {
namespace {

ParseResult parse_capture(std::vector<std::string> args) {
  return stats::test::parse_args(std::move(args));
}

TEST(CaptureOptions, Parsed) {
  auto r =
      parse_capture({"-c", "f.yaml", "capture", "--port", "p0", "--queue", "1", "--direction", "tx",
                     "--count", "200", "--seconds", "2.5", "--snaplen", "96", "-w", "-"});
  ASSERT_TRUE(r.options) << r.error;
  const CaptureOptions& c = r.options->capture;
  EXPECT_EQ(r.options->command, Command::kCapture);
  EXPECT_EQ(c.port, "p0");
  EXPECT_EQ(c.queue, 1);
  EXPECT_EQ(c.direction, CaptureDirection::kTx);
  EXPECT_EQ(c.count, 200u);
  EXPECT_DOUBLE_EQ(c.seconds, 2.5);
  EXPECT_EQ(c.snaplen, 96u);
  EXPECT_EQ(c.output, "-");
  r = parse_capture({"-c", "f.yaml", "capture", "--drops", "-w", "d.pcapng"});
  ASSERT_TRUE(r.options) << r.error;
  EXPECT_TRUE(r.options->capture.drops);
}

TEST(CaptureOptions, Refused) {
  auto err = [](std::vector<std::string> a) {
    auto r = parse_capture(std::move(a));
    return r.options ? std::string() : r.error;
  };
  EXPECT_NE(err({"-c", "f", "capture"}).find("needs -w"), std::string::npos);
  EXPECT_NE(err({"-c", "f", "capture", "-w"}).find("-w needs a value"), std::string::npos);
  EXPECT_NE(err({"-c", "f", "capture", "--direction", "up", "-w", "x"}).find("rx, tx or both"),
            std::string::npos);
  EXPECT_NE(err({"-c", "f", "capture", "--count", "0", "-w", "x"}).find("N >= 1"),
            std::string::npos);
  EXPECT_NE(err({"-c", "f", "capture", "--snaplen", "10", "-w", "x"}).find("14..65535"),
            std::string::npos);
  EXPECT_NE(err({"-c", "f", "capture", "--queue", "-1", "-w", "x"}).find("--queue"),
            std::string::npos);
  EXPECT_NE(err({"-c", "f", "status", "--drops"}).find("capture only"), std::string::npos);
  EXPECT_NE(err({"-c", "f", "serve", "-w", "x"}).find("capture only"), std::string::npos);
}

}  // namespace
}  // namespace ws::cli
