// Message framing for byte streams (docs/framing.md, `framing: length32`): every
// message is a 4-byte big-endian payload length followed by the payload.
// `framing: none` treats the stream as bytes with no message boundaries.
//
// The codec is shared by the data plane's TCP services and by the kernel-sockets
// twin (tools/wsperf), so both ends of a comparison speak exactly the same bytes.
// It never allocates after construction and never throws: TCP hands it data in
// whatever pieces segments arrive in, and a service must be able to count
// messages of any size without buffering them.
//
// Payloads carry a deterministic pattern (fill_pattern) that depends on the
// message sequence number and the byte offset, so a receiver can verify every
// byte without storing what was sent. docs/framing.md describes the format.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>

#include "stack/codec/pattern_simd.hpp"

namespace ws {

enum class Framing : uint8_t {
  kLength32,  // 4-byte big-endian payload length, then the payload
  kNone,      // the stream is all payload; no message boundaries
};

inline constexpr size_t kFrameHeaderBytes = 4;
// The wire allows up to 4 GiB - 1; 1 GiB by default so a corrupt or hostile
// length cannot make a collecting receiver reserve absurd amounts of memory.
inline constexpr uint64_t kDefaultMaxMessageBytes = uint64_t{1} << 30;
inline constexpr uint64_t kMaxWireMessageBytes = 0xFFFFFFFFu;

// Writes the length32 header for a payload of `payload_len` bytes into the
// first four bytes of `out`. False (nothing written) when `out` is shorter than
// four bytes or the length does not fit in 32 bits.
bool write_frame_header(std::span<uint8_t> out, uint64_t payload_len);

// --- Deterministic payload pattern -------------------------------------------
// byte(seq, off) = key(seq)[off % 8] + mix(off / 8)   (mod 256)
//   key(seq)  = the little-endian bytes of splitmix64(seq)
//   mix(w)    = ((w * 0x9E3779B1) mod 2^32) >> 24
// The per-message key catches a message delivered in place of another; the
// per-word term is not periodic in practice, so a stream shifted, duplicated or
// truncated by any number of bytes fails the check at the first wrong byte.
// Over TCP with length32, seq counts messages on the connection from 0 and off
// is the offset within the payload; with framing none the whole stream is
// message 0 and off is the stream offset. A UDP datagram for message seq holds
// pattern(seq, 0..len).
// Inline (as is fill_pattern's 8-byte case): a source of 8-byte messages computes one key
// and writes one word per message, and a call for each cost as much as the work.
inline uint64_t pattern_key(uint64_t seq) {
  // splitmix64: consecutive sequence numbers get unrelated keys.
  uint64_t z = seq + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
uint8_t pattern_byte(uint64_t seq, uint64_t offset);
void fill_pattern_general(uint64_t seq, uint64_t offset, std::span<uint8_t> out);
inline void fill_pattern(uint64_t seq, uint64_t offset, std::span<uint8_t> out) {
  if constexpr (std::endian::native == std::endian::little) {
    // Word 0 of a message is its key (the mix term of word 0 is 0).
    if (offset == 0 && out.size() == 8) {
      const uint64_t key = pattern_key(seq);
      std::memcpy(out.data(), &key, 8);
      return;
    }
    if (pattern::start_sized(offset, out.size()) &&
        pattern::fill_start(pattern_key(seq), out.data(), out.size() / 8)) {
      return;
    }
  }
  fill_pattern_general(seq, offset, out);
}
size_t check_pattern_general(uint64_t seq, uint64_t offset, std::span<const uint8_t> data);
// Index in `data` of the first byte that is not pattern(seq, offset + i), or
// data.size() when every byte matches.
inline size_t check_pattern(uint64_t seq, uint64_t offset, std::span<const uint8_t> data) {
  if constexpr (std::endian::native == std::endian::little) {
    if (pattern::start_sized(offset, data.size()) &&
        pattern::match_start(pattern_key(seq), data.data(), data.size() / 8)) {
      return data.size();
    }
  }
  return check_pattern_general(seq, offset, data);
}
// For receivers that do not know the sequence number (a UDP sink: datagrams
// are lost and reordered): the first eight bytes of a message are its key, so
// the rest must be consistent with them. Messages of 8 bytes or less pass.
bool check_pattern_self(std::span<const uint8_t> message);

// --- Encoder -----------------------------------------------------------------
// Produces the byte stream of a sender of fixed-size pattern messages: header
// and payload of message 0, 1, 2, ... written into whatever space the caller
// has (a socket buffer, a TCP send window), continuing exactly where the last
// call stopped. With framing none the stream is pattern(0, stream offset) and
// "messages" are message_size-byte chunks, counted for rates and limits.
class FrameEncoder {
 public:
  FrameEncoder(Framing framing, uint32_t message_size, uint64_t first_seq = 0);

  // Writes the next stream bytes into `out`; returns how many. Stops at the
  // message boundary after `message_limit` messages (counted from
  // construction) have been produced completely. Zero-length messages are
  // produced as bare headers (length32 only).
  size_t produce(std::span<uint8_t> out, uint64_t message_limit = UINT64_MAX);

  // Messages produced completely (header and every payload byte).
  uint64_t messages() const { return messages_; }
  uint64_t stream_bytes() const { return stream_bytes_; }
  // True when nothing of a message has been produced partially.
  bool at_boundary() const { return pos_ == 0; }
  // Header plus payload: the stream bytes one message occupies.
  uint64_t frame_bytes() const { return frame_bytes_; }
  // Sequence number of the message the next byte belongs to.
  uint64_t next_seq() const { return first_seq_ + messages_; }

 private:
  Framing framing_;
  uint32_t size_;
  uint64_t frame_bytes_;
  uint64_t first_seq_;
  uint64_t messages_ = 0;
  uint64_t stream_bytes_ = 0;
  uint64_t pos_ = 0;  // position within the current frame (header included)
  uint8_t header_[kFrameHeaderBytes] = {};
};

// --- Decoder -----------------------------------------------------------------
struct FrameDecoderConfig {
  Framing framing = Framing::kLength32;
  // A declared length above this is a protocol error. At most 4 GiB - 1.
  uint64_t max_message_bytes = kDefaultMaxMessageBytes;
  // Collect mode: deliver each message whole, in one kMessageComplete event.
  // A buffer of max_message_bytes is reserved at construction (pages are only
  // touched as messages use them), so pick the cap to suit the application.
  bool collect = false;
};

// What FrameDecoder::scan found in one input.
struct FrameScan {
  uint64_t messages = 0;    // messages completed in this input
  uint64_t mismatches = 0;  // with verify: payload pieces holding a byte that is not the pattern
  bool error = false;       // a protocol error (reported once, as kError from next())
};

enum class FrameEventKind : uint8_t {
  kNeedMore,         // the input is used up; nothing else to report
  kPayload,          // `data`: payload of message `message` at `offset`
  kMessageComplete,  // message `message` ended; its payload length is `length`
  kError,            // protocol error, reported once (see FrameDecoder)
};

struct FrameEvent {
  FrameEventKind kind = FrameEventKind::kNeedMore;
  // kPayload: the bytes (a view into the caller's input).
  // kMessageComplete in collect mode: the whole payload (a view into the input
  // when the message arrived in one piece, otherwise into the decoder's buffer;
  // valid until the next call). Empty otherwise.
  std::span<const uint8_t> data;
  uint64_t message = 0;  // sequence number of the message, from 0 (none: always 0)
  uint64_t offset = 0;   // kPayload: offset of data in the payload (none: in the stream)
  // Declared payload length of the message (kError: the offending length;
  // framing none: 0).
  uint64_t length = 0;
};

// Incremental length32 decoder. Feed it the stream in any pieces; call next()
// until it returns kNeedMore. Events come in stream order: for each message
// zero or more kPayload events (never in collect mode), then exactly one
// kMessageComplete, also for zero-length messages.
//
// A declared length above max_message_bytes (or a collect buffer that could
// not be reserved) makes the decoder fail: kError is returned once, and from
// then on next() swallows all input and returns kNeedMore. The caller is
// expected to close the connection: there is no way to resynchronise a
// length-prefixed stream.
class FrameDecoder {
 public:
  explicit FrameDecoder(const FrameDecoderConfig& config = {});

  // Consumes bytes from the front of `input` (advancing it) and returns the
  // next event. Stops early after a payload piece or a message end, so the
  // caller may stop between any two events (backpressure) and resume later
  // with what is left of `input`.
  FrameEvent next(std::span<const uint8_t>& input);

  // Runs next() over `input` and passes every event except kNeedMore to
  // `handler(const FrameEvent&)`. If the handler returns bool, false stops
  // early. Returns the number of bytes consumed.
  template <class Handler>
  size_t feed(std::span<const uint8_t> input, Handler&& handler) {
    const size_t total = input.size();
    for (;;) {
      const FrameEvent ev = next(input);
      if (ev.kind == FrameEventKind::kNeedMore) break;
      if constexpr (std::is_same_v<std::invoke_result_t<Handler&, const FrameEvent&>, bool>) {
        if (!handler(ev)) break;
      } else {
        handler(ev);
      }
    }
    return total - input.size();
  }

  // Consumes all of `input` for a receiver that only counts (a sink) or also checks the
  // payload pattern (`verify`: byte `off` of message `seq` must be pattern_byte(seq, off),
  // seq counting this decoder's messages from 0). Frames lying whole in the input are
  // skipped, or checked word by word, in one loop without an event per message; the
  // frames cut by the input's ends go through next(). Same state and counters as next().
  FrameScan scan(std::span<const uint8_t> input, bool verify);

  // A message lying whole at the front of `input` while the decoder is between messages
  // (length32, not collect mode): consumes its header and payload, counts it as next()
  // would, puts its payload in `payload` and returns true. Otherwise (a header or payload
  // cut by the input's end, a length above the limit, another state) returns false with
  // nothing consumed: next() or feed() then take the input. For a receiver that expects a
  // message per input, an echo or a reply, and checks it in place without the event path.
  bool take_frame(std::span<const uint8_t>& input, std::span<const uint8_t>& payload);

  // Forgets any partial message and any error: for a new connection.
  void reset();

  bool failed() const { return state_ == State::kFailed || state_ == State::kErrorPending; }
  // True between the first header byte of a message and its end: a stream that
  // ends here was cut in the middle of a message.
  bool in_message() const;
  uint64_t messages() const { return messages_; }            // completed messages
  uint64_t payload_bytes() const { return payload_bytes_; }  // payload bytes passed
  uint64_t stream_bytes() const { return stream_bytes_; }    // all bytes consumed
  const FrameDecoderConfig& config() const { return config_; }

 private:
  enum class State : uint8_t { kHeader, kPayload, kComplete, kErrorPending, kFailed };

  FrameEvent complete_event(std::span<const uint8_t> data);
  // The next message's length from the front of `input` (advancing it past the header
  // bytes taken): read in place when the whole header is there, else collected across
  // calls; false until its last byte arrived.
  bool take_header(std::span<const uint8_t>& input);

  FrameDecoderConfig config_;
  State state_ = State::kHeader;
  uint8_t header_[kFrameHeaderBytes] = {};
  uint8_t header_have_ = 0;
  uint64_t length_ = 0;  // declared length of the current message
  uint64_t offset_ = 0;  // payload bytes of the current message seen so far
  uint64_t messages_ = 0;
  uint64_t payload_bytes_ = 0;
  uint64_t stream_bytes_ = 0;
  std::unique_ptr<uint8_t[]> buffer_;  // collect mode only
  std::span<const uint8_t> whole_;     // collect mode: a message taken without copying
};

}  // namespace ws
