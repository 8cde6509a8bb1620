// CPU cost per message of the TCP source -> sink path above TCP, without DPDK and without
// TCP: a deterministic program for callgrind (instructions per message do not depend on
// how loaded the machine is, unlike msg/s). docs/benchmarks.md, "Instructions per message".
//
//   pipeline_cost MODE SIZE COUNT [verify]
//     MODE  message: the per-message producer (fill_pattern into a scratch buffer, then
//                    TxPipeline::push) and the event-per-message receiver (FrameDecoder::feed),
//                    as the services did before the bulk path;
//           bulk:    TxPipeline::push_bulk writing pattern frames in place, and
//                    FrameDecoder::scan on the receiving side;
//           direct:  as bulk, but the messages go straight into the send ring
//                    (push_bulk_direct, the source's path since the direct path:
//                    docs/pipeline.md "Writing into the send ring"), no batch -> ring copy.
//     verify       the receiver also checks every payload byte against the pattern.
//
// The TX step drains the pipeline into a 1 MiB ring (the copy Connection::send makes), and
// the receiver reads the ring back in 1448-byte pieces (one MSS, as TCP delivers). The
// program exits 1 unless every message arrived (and, with verify, every byte matched), so
// the figure is never that of a broken path.
//
// Instructions per message: run it under callgrind at two counts and divide the
// difference of the totals by the difference of the counts (start-up cancels out):
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null pipeline_cost bulk 8 200000
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "stack/codec/framing.hpp"
#include "stack/core/time.hpp"
#include "stack/pipeline/tx_pipeline.hpp"

namespace {

constexpr size_t kRing = size_t{1} << 20;
constexpr size_t kSegment = 1448;

struct Receiver {
  explicit Receiver(bool verify)
      : verify(verify), dec({ws::Framing::kLength32, ws::kDefaultMaxMessageBytes, false}) {}
  bool verify;
  ws::FrameDecoder dec;
  uint64_t messages = 0;
  uint64_t bad = 0;

  void per_event(std::span<const uint8_t> bytes) {
    dec.feed(bytes, [&](const ws::FrameEvent& ev) {
      if (ev.kind == ws::FrameEventKind::kMessageComplete) ++messages;
      if (ev.kind == ws::FrameEventKind::kError) ++bad;
      if (verify && ev.kind == ws::FrameEventKind::kPayload &&
          ws::check_pattern(ev.message, ev.offset, ev.data) != ev.data.size()) {
        ++bad;
      }
    });
  }
  void scanned(std::span<const uint8_t> bytes) {
    const ws::FrameScan s = dec.scan(bytes, verify);
    messages += s.messages;
    bad += s.mismatches + (s.error ? 1 : 0);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: pipeline_cost message|bulk|direct SIZE COUNT [verify]\n");
    return 2;
  }
  const std::string mode = argv[1];
  const bool direct = mode == "direct";
  const bool bulk = mode == "bulk" || direct;
  if (!bulk && mode != "message") {
    std::fprintf(stderr, "pipeline_cost: mode must be message, bulk or direct\n");
    return 2;
  }
  const auto size = static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10));
  const uint64_t count = std::strtoull(argv[3], nullptr, 10);
  const bool verify = argc > 4 && std::string(argv[4]) == "verify";
  if (size > (1u << 20)) {
    std::fprintf(stderr, "pipeline_cost: SIZE at most 1 MiB\n");
    return 2;
  }

  ws::pipeline::PipelineParams prm;
  prm.initial_mss = 1448;
  ws::pipeline::TxPipeline pl(prm);
  std::vector<uint8_t> scratch(size);
  std::vector<uint8_t> ring(kRing);
  size_t ring_pos = 0;
  Receiver rx(verify);
  ws::Instant now = ws::Instant::from_ns(1000);
  const uint64_t high = 2 * uint64_t{pl.batch_limit()};
  uint64_t seq = 0;

  // The receiver reads what the last round put in the ring, in segment-sized pieces.
  size_t unread_from = 0;
  size_t unread = 0;
  auto receive = [&] {
    for (size_t off = 0; off < unread; off += kSegment) {
      const size_t at = (unread_from + off) % kRing;
      const size_t n = std::min({kSegment, unread - off, kRing - at});
      rx.scanned({ring.data() + at, n});
      if (n < std::min(kSegment, unread - off)) {
        // The piece wraps: its second part from the ring's start.
        rx.scanned({ring.data(), std::min(kSegment, unread - off) - n});
      }
    }
    unread_from = (unread_from + unread) % kRing;
    unread = 0;
  };
  // The send ring as Connection::send_reserve/send_commit lend it: the free space from the
  // write position, in two runs where it wraps.
  struct Space {
    std::span<uint8_t> first, second;
  };
  auto reserve = [&](size_t max) {
    const size_t n = std::min(max, kRing - unread);
    const size_t first = std::min(n, kRing - ring_pos);
    return Space{{ring.data() + ring_pos, first}, {ring.data(), n - first}};
  };
  auto commit = [&](size_t n) {
    ring_pos = (ring_pos + n) % kRing;
    unread += n;
    return n;
  };

  while (direct && (seq < count || pl.queued_bytes() != 0)) {
    // Each round is one backoff later; the receiver has read (and acknowledged) everything
    // of the last round. The source: straight into the ring, as TcpSourceService does
    // (PipelinedTx::push_bulk): the TX step first, then the direct path, then up to two
    // batches queued when the ring is full.
    now += prm.backoff;
    pl.set_in_flight(0);
    pl.drain(now, [&](std::span<const uint8_t> s) {
      const Space sp = reserve(s.size());
      const size_t n = sp.first.size() + sp.second.size();
      std::memcpy(sp.first.data(), s.data(), sp.first.size());
      std::memcpy(sp.second.data(), s.data() + sp.first.size(), sp.second.size());
      return commit(n);
    });
    const uint64_t first = seq;
    auto fill = [first](uint64_t i, uint64_t off, std::span<uint8_t> out) {
      ws::fill_pattern(first + i, off, out);
    };
    const ws::pipeline::DirectResult d = pl.push_bulk_direct(
        count - seq, size, ws::pipeline::Priority::kData, now, fill, reserve, commit);
    seq += d.accepted;
    if (!(d.room_short && d.accepted > 0) && seq < count && pl.queued_bytes() < high) {
      const uint64_t frame = ws::kFrameHeaderBytes + uint64_t{size};
      const uint64_t want = std::min<uint64_t>(count - seq, (high - pl.queued_bytes()) / frame + 1);
      const uint64_t base = seq;
      seq += pl.push_bulk(want, size, ws::pipeline::Priority::kData, now,
                          [base](uint64_t i, uint64_t off, std::span<uint8_t> out) {
                            ws::fill_pattern(base + i, off, out);
                          })
                 .accepted;
    }
    receive();
  }

  while (!direct && (seq < count || pl.queued_bytes() != 0)) {
    // Each round is one backoff later: the pipeline is in batching mode (two batches
    // queued), and its open batch goes at the deadline, as on a busy connection.
    now += prm.backoff;
    // The source: fill the pipeline to about two batches, as TcpSourceService does.
    if (bulk) {
      const uint64_t frame = ws::kFrameHeaderBytes + uint64_t{size};
      if (pl.queued_bytes() < high && seq < count) {
        const uint64_t want =
            std::min<uint64_t>(count - seq, (high - pl.queued_bytes()) / frame + 1);
        const uint64_t first = seq;
        const ws::pipeline::BulkPushResult r =
            pl.push_bulk(want, size, ws::pipeline::Priority::kData, now,
                         [first](uint64_t i, uint64_t off, std::span<uint8_t> out) {
                           ws::fill_pattern(first + i, off, out);
                         });
        seq += r.accepted;
      }
    } else {
      while (seq < count && pl.queued_bytes() < high) {
        ws::fill_pattern(seq, 0, scratch);
        if (pl.push(scratch, ws::pipeline::Priority::kData, now).status !=
            ws::pipeline::PushStatus::kOk) {
          break;
        }
        ++seq;
      }
    }
    // The TX step: everything available goes into the "send ring", and the receiver reads
    // it in segment-sized pieces.
    pl.drain(now, [&](std::span<const uint8_t> s) {
      size_t done = 0;
      while (done < s.size()) {
        const size_t n = std::min(s.size() - done, kRing - ring_pos);
        std::memcpy(ring.data() + ring_pos, s.data() + done, n);
        for (size_t off = 0; off < n; off += kSegment) {
          const std::span<const uint8_t> piece(ring.data() + ring_pos + off,
                                               std::min(kSegment, n - off));
          if (bulk) {
            rx.scanned(piece);
          } else {
            rx.per_event(piece);
          }
        }
        ring_pos = (ring_pos + n) % kRing;
        done += n;
      }
      return s.size();
    });
  }
  std::printf("%s size=%u messages sent=%llu received=%llu bad=%llu verify=%d\n", mode.c_str(),
              size, static_cast<unsigned long long>(seq),
              static_cast<unsigned long long>(rx.messages), static_cast<unsigned long long>(rx.bad),
              verify ? 1 : 0);
  return rx.messages == count && rx.bad == 0 ? 0 : 1;
}
