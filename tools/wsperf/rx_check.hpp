// Counting and checking what a TCP connection receives (the echo and sink servers, and
// the ping client's replies), with the framing codec the data plane uses.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>

#include "stack/codec/framing.hpp"
#include "tools/wsperf/options.hpp"
#include "tools/wsperf/report.hpp"

namespace wsperf {

inline ws::FrameDecoderConfig decoder_config(const Options& opt) {
  ws::FrameDecoderConfig cfg;
  cfg.framing = opt.framing;
  cfg.max_message_bytes = opt.max_message;
  return cfg;
}

// Counts and checks received stream bytes. One verify error per bad message
// (per connection with framing none, where there is one endless message).
struct RxCheck {
  ws::FrameDecoder dec;
  bool bad = false;
  bool failed = false;

  explicit RxCheck(const Options& opt) : dec(decoder_config(opt)) {}

  // For a receiver that needs no event per message (the sink, and the echo, which sends the
  // stream back as it is): length32 frames are counted, and with --verify checked, by
  // FrameDecoder::scan, as the data plane's sink does, so that both sides of a comparison
  // do the same work per message. A verify error is then counted per bad frame, or per bad
  // piece of a frame cut by a read. Framing none goes through consume().
  void count(std::span<const uint8_t> data, const Options& opt, Counters& k) {
    if (dec.config().framing != ws::Framing::kLength32) {
      consume(data, opt, k, [](uint64_t) {});
      return;
    }
    k.stream_bytes += data.size();
    const uint64_t payload_before = dec.payload_bytes();
    const ws::FrameScan r = dec.scan(data, opt.verify);
    k.bytes += dec.payload_bytes() - payload_before;
    k.messages += r.messages;
    k.verify_errors += r.mismatches;
    if (r.error) {
      ++k.protocol_errors;
      failed = true;
      std::fprintf(stderr, "wsperf: a message length above the limit %llu; closing\n",
                   static_cast<unsigned long long>(opt.max_message));
    }
  }

  // `on_complete(length)` runs at every message end.
  template <class OnComplete>
  void consume(std::span<const uint8_t> data, const Options& opt, Counters& k,
               OnComplete&& on_complete) {
    k.stream_bytes += data.size();
    dec.feed(data, [&](const ws::FrameEvent& ev) {
      switch (ev.kind) {
        case ws::FrameEventKind::kPayload:
          k.bytes += ev.data.size();
          if (opt.verify && !bad &&
              ws::check_pattern(ev.message, ev.offset, ev.data) != ev.data.size()) {
            bad = true;
            ++k.verify_errors;
          }
          break;
        case ws::FrameEventKind::kMessageComplete:
          ++k.messages;
          bad = false;
          on_complete(ev.length);
          break;
        case ws::FrameEventKind::kError:
          ++k.protocol_errors;
          failed = true;
          std::fprintf(stderr, "wsperf: message length %llu above the limit %llu; closing\n",
                       static_cast<unsigned long long>(ev.length),
                       static_cast<unsigned long long>(opt.max_message));
          break;
        case ws::FrameEventKind::kNeedMore:
          break;
      }
    });
  }
};

}  // namespace wsperf
