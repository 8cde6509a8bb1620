#include "stack/codec/framing.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>

#include "stack/codec/pattern_simd.hpp"
#include "stack/core/bytes.hpp"

namespace ws {

bool write_frame_header(std::span<uint8_t> out, uint64_t payload_len) {
  if (out.size() < kFrameHeaderBytes || payload_len > kMaxWireMessageBytes) return false;
  store_be32(out.data(), static_cast<uint32_t>(payload_len));
  return true;
}

// --- Pattern -------------------------------------------------------------------

namespace {

constexpr uint64_t kLowBits = 0x7F7F7F7F7F7F7F7Full;
constexpr uint64_t kHighBits = 0x8080808080808080ull;
constexpr uint64_t kOnes = 0x0101010101010101ull;

inline uint8_t word_mix(uint64_t word) {
  return static_cast<uint8_t>(static_cast<uint32_t>(word * 0x9E3779B1ull) >> 24);
}

inline uint8_t byte_of(uint64_t key, uint64_t offset) {
  return static_cast<uint8_t>(static_cast<uint8_t>(key >> (8 * (offset & 7))) +
                              word_mix(offset >> 3));
}

// Adds `b` to every byte of `key` without carries between bytes (SWAR), which
// is the pattern of one aligned 8-byte word in little-endian order.
inline uint64_t pattern_word(uint64_t key, uint64_t word) {
  const uint64_t add = kOnes * word_mix(word);
  return ((key & kLowBits) + (add & kLowBits)) ^ ((key ^ add) & kHighBits);
}

}  // namespace

uint8_t pattern_byte(uint64_t seq, uint64_t offset) { return byte_of(pattern_key(seq), offset); }

void fill_pattern_general(uint64_t seq, uint64_t offset, std::span<uint8_t> out) {
  const uint64_t key = pattern_key(seq);
  uint8_t* p = out.data();
  size_t n = out.size();
  if constexpr (std::endian::native == std::endian::little) {
    // Small messages (a source of 8-byte messages writes one word per message): the word
    // directly, without the set-up of the vectorised loop below, which cost more than the
    // word itself.
    if ((offset & 7) == 0 && n < 16) {
      if (n >= 8) {
        const uint64_t w = pattern_word(key, offset >> 3);
        std::memcpy(p, &w, 8);
        p += 8;
        offset += 8;
        n -= 8;
      }
      for (size_t i = 0; i < n; ++i) p[i] = byte_of(key, offset + i);
      return;
    }
  }
  // Head bytes up to an 8-byte boundary of the offset, then whole words.
  while (n > 0 && (offset & 7) != 0) {
    *p++ = byte_of(key, offset++);
    --n;
  }
  if constexpr (std::endian::native == std::endian::little) {
    const size_t vec = pattern::fill_words(key, offset >> 3, p, n >> 3) * 8;
    p += vec;
    offset += vec;
    n -= vec;
    while (n >= 8) {
      const uint64_t w = pattern_word(key, offset >> 3);
      std::memcpy(p, &w, 8);
      p += 8;
      offset += 8;
      n -= 8;
    }
  }
  while (n > 0) {
    *p++ = byte_of(key, offset++);
    --n;
  }
}

size_t check_pattern_general(uint64_t seq, uint64_t offset, std::span<const uint8_t> data) {
  // Compared in place, a word at a time where the offset is word-aligned: no buffer, and
  // for a small message little more than computing its key.
  const uint64_t key = pattern_key(seq);
  const uint8_t* p = data.data();
  const size_t n = data.size();
  size_t i = 0;
  while (i < n && ((offset + i) & 7) != 0) {
    if (p[i] != byte_of(key, offset + i)) return i;
    ++i;
  }
  if constexpr (std::endian::native == std::endian::little) {
    i += pattern::match_words(key, (offset + i) >> 3, p + i, (n - i) >> 3) * 8;
    while (n - i >= 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if (w != pattern_word(key, (offset + i) >> 3)) break;  // the byte loop finds which
      i += 8;
    }
  }
  for (; i < n; ++i) {
    if (p[i] != byte_of(key, offset + i)) return i;
  }
  return n;
}

bool check_pattern_self(std::span<const uint8_t> message) {
  if (message.size() <= 8) return true;
  // Offsets 0..7 are word 0, whose mix term is 0: the first 8 bytes are the key.
  uint64_t key = 0;
  for (size_t i = 0; i < 8; ++i) key |= static_cast<uint64_t>(message[i]) << (8 * i);
  for (size_t i = 8; i < message.size(); ++i) {
    if (message[i] != byte_of(key, i)) return false;
  }
  return true;
}

// --- Encoder -------------------------------------------------------------------

FrameEncoder::FrameEncoder(Framing framing, uint32_t message_size, uint64_t first_seq)
    : framing_(framing),
      size_(message_size),
      frame_bytes_(message_size + (framing == Framing::kLength32 ? kFrameHeaderBytes : 0)),
      first_seq_(first_seq) {
  store_be32(header_, message_size);
}

size_t FrameEncoder::produce(std::span<uint8_t> out, uint64_t message_limit) {
  // framing none with empty messages has no bytes to produce at all.
  if (frame_bytes_ == 0) return 0;
  const size_t header = framing_ == Framing::kLength32 ? kFrameHeaderBytes : 0;
  size_t written = 0;
  while (written < out.size() && messages_ < message_limit) {
    if (framing_ == Framing::kLength32 && pos_ == 0) {
      // Whole frames in one loop, without the piece arithmetic below: a source of small
      // messages spends its time here (the kernel-sockets twin fills 256 KiB at once).
      const uint64_t whole =
          std::min<uint64_t>((out.size() - written) / frame_bytes_, message_limit - messages_);
      if (whole > 0) {
        uint8_t* p = out.data() + written;
        for (uint64_t k = 0; k < whole; ++k) {
          std::memcpy(p, header_, kFrameHeaderBytes);
          fill_pattern(first_seq_ + messages_ + k, 0,
                       std::span<uint8_t>(p + kFrameHeaderBytes, size_));
          p += frame_bytes_;
        }
        messages_ += whole;
        written += static_cast<size_t>(whole * frame_bytes_);
        continue;
      }
    }
    const uint64_t seq = framing_ == Framing::kLength32 ? first_seq_ + messages_ : 0;
    if (pos_ < header) {
      const size_t n = std::min<size_t>(header - pos_, out.size() - written);
      std::memcpy(out.data() + written, header_ + pos_, n);
      written += n;
      pos_ += n;
      if (pos_ < header) break;
    }
    const uint64_t payload_pos = pos_ - header;
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(size_ - payload_pos, out.size() - written));
    // With framing none the pattern runs over the stream, not the message.
    const uint64_t pattern_off =
        framing_ == Framing::kLength32 ? payload_pos : stream_bytes_ + written;
    fill_pattern(seq, pattern_off, out.subspan(written, n));
    written += n;
    pos_ += n;
    if (pos_ == frame_bytes_) {
      pos_ = 0;
      ++messages_;
    }
  }
  stream_bytes_ += written;
  return written;
}

// --- Decoder -------------------------------------------------------------------

FrameDecoder::FrameDecoder(const FrameDecoderConfig& config) : config_(config) {
  config_.max_message_bytes = std::min(config_.max_message_bytes, kMaxWireMessageBytes);
  if (config_.collect && config_.framing == Framing::kLength32 && config_.max_message_bytes > 0) {
    // Default-initialised (not zeroed) so a large cap costs address space, not
    // memory, until messages that large arrive. No exceptions: a failed
    // reservation is reported as the decoder's one error.
    buffer_.reset(new (std::nothrow) uint8_t[config_.max_message_bytes]);
    if (!buffer_) state_ = State::kErrorPending;
  }
}

void FrameDecoder::reset() {
  state_ = (config_.collect && config_.framing == Framing::kLength32 &&
            config_.max_message_bytes > 0 && !buffer_)
               ? State::kErrorPending
               : State::kHeader;
  header_have_ = 0;
  length_ = 0;
  offset_ = 0;
  messages_ = 0;
  payload_bytes_ = 0;
  stream_bytes_ = 0;
  whole_ = {};
}

bool FrameDecoder::in_message() const {
  if (config_.framing == Framing::kNone) return false;
  return (state_ == State::kHeader && header_have_ > 0) || state_ == State::kPayload ||
         state_ == State::kComplete;
}

namespace {

// How many whole frames of `frame` bytes, each starting with the same four header bytes
// `hdr`, follow one another from `p` within `n` bytes. A stream of fixed-size messages is
// a run of identical headers, so the headers are compared four at a time with loads that
// do not depend on each other: walking them one by one makes every header load wait for
// the length read from the one before (a chain of load latencies per message).
inline size_t same_header_run(const uint8_t* p, size_t n, size_t frame, uint32_t hdr) {
  size_t k = 0;
  size_t at = 0;
  while (n - at >= 4 * frame) {
    uint32_t a, b, c, d;
    std::memcpy(&a, p + at, 4);
    std::memcpy(&b, p + at + frame, 4);
    std::memcpy(&c, p + at + 2 * frame, 4);
    std::memcpy(&d, p + at + 3 * frame, 4);
    if (((a ^ hdr) | (b ^ hdr) | (c ^ hdr) | (d ^ hdr)) != 0) break;
    at += 4 * frame;
    k += 4;
  }
  while (n - at >= frame) {
    uint32_t a;
    std::memcpy(&a, p + at, 4);
    if (a != hdr) break;
    at += frame;
    ++k;
  }
  return k;
}

}  // namespace

FrameScan FrameDecoder::scan(std::span<const uint8_t> input, bool verify) {
  FrameScan r;
  const bool whole_frames = config_.framing == Framing::kLength32 && !config_.collect;
  for (;;) {
    if (whole_frames && state_ == State::kHeader && header_have_ == 0) {
      // Frames lying whole in the input: header, length check, skip (or verify) the payload.
      // Counters in locals: kept in the object they would be stored and reloaded per frame.
      const uint8_t* p = input.data();
      const size_t n = input.size();
      size_t i = 0;
      uint64_t msgs = messages_;
      uint64_t payload = 0;
      uint64_t mismatches = 0;
      while (n - i >= kFrameHeaderBytes) {
        const uint64_t len = load_be32(p + i);
        const size_t frame = kFrameHeaderBytes + static_cast<size_t>(len);
        if (len > config_.max_message_bytes || n - i < frame) break;
        if (verify) {
          if (check_pattern(msgs, 0, {p + i + kFrameHeaderBytes, len}) != len) ++mismatches;
          ++msgs;
          payload += len;
          i += frame;
          continue;
        }
        // This frame and the run of equal frames after it (same length, so same header).
        uint32_t hdr;
        std::memcpy(&hdr, p + i, 4);
        const size_t k = 1 + same_header_run(p + i + frame, n - i - frame, frame, hdr);
        msgs += k;
        payload += k * len;
        i += k * frame;
      }
      r.messages += msgs - messages_;
      r.mismatches += mismatches;
      messages_ = msgs;
      payload_bytes_ += payload;
      stream_bytes_ += i;
      input = input.subspan(i);
    }
    // A frame cut by the end of the input (or an error): the event path.
    const FrameEvent ev = next(input);
    switch (ev.kind) {
      case FrameEventKind::kNeedMore:
        return r;  // next() returns this only with the input used up
      case FrameEventKind::kPayload:
        // framing none: the stream is message 0 and the offset is the stream offset.
        if (verify && check_pattern(ev.message, ev.offset, ev.data) != ev.data.size()) {
          ++r.mismatches;
        }
        break;
      case FrameEventKind::kMessageComplete:
        ++r.messages;
        if (verify && config_.collect && check_pattern(ev.message, 0, ev.data) != ev.data.size()) {
          ++r.mismatches;
        }
        break;
      case FrameEventKind::kError:
        r.error = true;
        break;
    }
  }
}

bool FrameDecoder::take_frame(std::span<const uint8_t>& input, std::span<const uint8_t>& payload) {
  if (state_ != State::kHeader || header_have_ != 0 || config_.framing != Framing::kLength32 ||
      config_.collect || input.size() < kFrameHeaderBytes) {
    return false;
  }
  const uint64_t len = load_be32(input.data());
  if (len > config_.max_message_bytes || input.size() - kFrameHeaderBytes < len) return false;
  payload = input.subspan(kFrameHeaderBytes, static_cast<size_t>(len));
  input = input.subspan(kFrameHeaderBytes + static_cast<size_t>(len));
  ++messages_;
  payload_bytes_ += len;
  stream_bytes_ += kFrameHeaderBytes + len;
  return true;
}

FrameEvent FrameDecoder::complete_event(std::span<const uint8_t> data) {
  FrameEvent ev;
  ev.kind = FrameEventKind::kMessageComplete;
  ev.data = data;
  ev.message = messages_;
  ev.length = length_;
  ev.offset = 0;
  ++messages_;
  state_ = State::kHeader;
  offset_ = 0;
  whole_ = {};
  return ev;
}

// Inline into next(), its only caller: a call per message cost 16 instructions (echo_cost).
[[gnu::always_inline]] inline bool FrameDecoder::take_header(std::span<const uint8_t>& input) {
  if (header_have_ == 0 && input.size() >= kFrameHeaderBytes) {
    // A whole header in the input (the usual case): read in place.
    length_ = load_be32(input.data());
    input = input.subspan(kFrameHeaderBytes);
    stream_bytes_ += kFrameHeaderBytes;
    return true;
  }
  const size_t n = std::min<size_t>(kFrameHeaderBytes - header_have_, input.size());
  std::memcpy(header_ + header_have_, input.data(), n);
  header_have_ = static_cast<uint8_t>(header_have_ + n);
  input = input.subspan(n);
  stream_bytes_ += n;
  if (header_have_ < kFrameHeaderBytes) return false;
  header_have_ = 0;
  length_ = load_be32(header_);
  return true;
}

FrameEvent FrameDecoder::next(std::span<const uint8_t>& input) {
  FrameEvent ev;
  // Nothing to consume (the call that ends every feed): only an event already due, a
  // message's end or an error, comes out; every other state would return kNeedMore below.
  if (input.empty() && state_ != State::kComplete && state_ != State::kErrorPending) return ev;
  if (state_ == State::kFailed) {
    stream_bytes_ += input.size();
    input = {};
    return ev;
  }
  if (state_ == State::kErrorPending) {
    state_ = State::kFailed;
    ev.kind = FrameEventKind::kError;
    ev.message = messages_;
    ev.length = config_.max_message_bytes;
    return ev;
  }

  if (config_.framing == Framing::kNone) {
    if (input.empty()) return ev;
    ev.kind = FrameEventKind::kPayload;
    ev.data = input;
    ev.offset = stream_bytes_;
    stream_bytes_ += input.size();
    payload_bytes_ += input.size();
    input = {};
    return ev;
  }

  if (state_ == State::kComplete) return complete_event({});

  if (state_ == State::kHeader) {
    if (!take_header(input)) return ev;
    offset_ = 0;
    if (length_ > config_.max_message_bytes) {
      state_ = State::kFailed;
      ev.kind = FrameEventKind::kError;
      ev.message = messages_;
      ev.length = length_;
      return ev;
    }
    if (length_ == 0) return complete_event({});
    state_ = State::kPayload;
  }

  // State::kPayload
  if (input.empty()) return ev;
  const size_t take = static_cast<size_t>(std::min<uint64_t>(length_ - offset_, input.size()));
  const std::span<const uint8_t> piece = input.first(take);
  input = input.subspan(take);
  stream_bytes_ += take;
  payload_bytes_ += take;

  if (config_.collect) {
    if (offset_ == 0 && take == length_) {
      // The whole message is in this piece: hand out the caller's bytes.
      offset_ = take;
      return complete_event(piece);
    }
    std::memcpy(buffer_.get() + offset_, piece.data(), take);
    offset_ += take;
    if (offset_ < length_) return ev;  // input used up; wait for the rest
    return complete_event(std::span<const uint8_t>(buffer_.get(), length_));
  }

  ev.kind = FrameEventKind::kPayload;
  ev.data = piece;
  ev.message = messages_;
  ev.offset = offset_;
  ev.length = length_;
  offset_ += take;
  if (offset_ == length_) state_ = State::kComplete;
  return ev;
}

}  // namespace ws
