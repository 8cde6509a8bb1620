// TCP header (RFC 9293 section 3.1) and its options: MSS (RFC 9293 3.2),
// window scale and timestamps (RFC 7323), SACK-permitted and SACK (RFC 2018).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "stack/core/bytes.hpp"
#include "stack/core/seqnum.hpp"

namespace ws::wire {

namespace tcpflag {
inline constexpr uint8_t kFin = 0x01;
inline constexpr uint8_t kSyn = 0x02;
inline constexpr uint8_t kRst = 0x04;
inline constexpr uint8_t kPsh = 0x08;
inline constexpr uint8_t kAck = 0x10;
inline constexpr uint8_t kUrg = 0x20;
inline constexpr uint8_t kEce = 0x40;
inline constexpr uint8_t kCwr = 0x80;
}  // namespace tcpflag

namespace tcpopt {
inline constexpr uint8_t kEnd = 0;
inline constexpr uint8_t kNop = 1;
inline constexpr uint8_t kMss = 2;
inline constexpr uint8_t kWscale = 3;
inline constexpr uint8_t kSackPermitted = 4;
inline constexpr uint8_t kSack = 5;
inline constexpr uint8_t kTimestamp = 8;
}  // namespace tcpopt

struct SackBlock {
  SeqNum left;
  SeqNum right;
};

// Options found in a segment. Unknown options are skipped by their length.
struct TcpOptions {
  std::optional<uint16_t> mss;
  std::optional<uint8_t> wscale;
  bool sack_permitted = false;
  std::optional<uint32_t> ts_val;
  uint32_t ts_ecr = 0;
  uint8_t sack_count = 0;
  std::array<SackBlock, 4> sack{};
};

class TcpView {
 public:
  static constexpr size_t kMinHeaderLen = 20;
  static constexpr size_t kMaxHeaderLen = 60;
  static constexpr size_t kSrcPortOff = 0;
  static constexpr size_t kDstPortOff = 2;
  static constexpr size_t kSeqOff = 4;
  static constexpr size_t kAckOff = 8;
  static constexpr size_t kDataOffOff = 12;
  static constexpr size_t kFlagsOff = 13;
  static constexpr size_t kWindowOff = 14;
  static constexpr size_t kChecksumOff = 16;
  static constexpr size_t kUrgentOff = 18;

  enum class Error : uint8_t { kNone, kTruncated, kBadDataOffset };

  // Checks that the fixed header is present and that the data offset lies within
  // [20, segment length].
  static std::optional<TcpView> parse(std::span<const uint8_t> b, Error* err = nullptr) {
    auto fail = [&](Error e) {
      if (err) *err = e;
      return std::nullopt;
    };
    if (b.size() < kMinHeaderLen) return fail(Error::kTruncated);
    size_t hl = size_t{static_cast<uint8_t>(b[kDataOffOff] >> 4)} * 4;
    if (hl < kMinHeaderLen || hl > b.size()) return fail(Error::kBadDataOffset);
    if (err) *err = Error::kNone;
    return TcpView(b);
  }

  uint16_t src_port() const { return load_be16(b_.data() + kSrcPortOff); }
  uint16_t dst_port() const { return load_be16(b_.data() + kDstPortOff); }
  SeqNum seq() const { return SeqNum(load_be32(b_.data() + kSeqOff)); }
  SeqNum ack() const { return SeqNum(load_be32(b_.data() + kAckOff)); }
  size_t header_len() const { return size_t{static_cast<uint8_t>(b_[kDataOffOff] >> 4)} * 4; }
  uint8_t flags() const { return b_[kFlagsOff]; }
  bool fin() const { return (flags() & tcpflag::kFin) != 0; }
  bool syn() const { return (flags() & tcpflag::kSyn) != 0; }
  bool rst() const { return (flags() & tcpflag::kRst) != 0; }
  bool psh() const { return (flags() & tcpflag::kPsh) != 0; }
  bool has_ack() const { return (flags() & tcpflag::kAck) != 0; }
  bool urg() const { return (flags() & tcpflag::kUrg) != 0; }
  uint16_t window() const { return load_be16(b_.data() + kWindowOff); }
  uint16_t checksum() const { return load_be16(b_.data() + kChecksumOff); }
  uint16_t urgent() const { return load_be16(b_.data() + kUrgentOff); }
  std::span<const uint8_t> options_bytes() const {
    return b_.subspan(kMinHeaderLen, header_len() - kMinHeaderLen);
  }
  std::span<const uint8_t> payload() const { return b_.subspan(header_len()); }
  std::span<const uint8_t> bytes() const { return b_; }
  // Sequence space the segment occupies: payload plus one each for SYN and FIN.
  uint32_t seg_len() const {
    return static_cast<uint32_t>(payload().size()) + (syn() ? 1 : 0) + (fin() ? 1 : 0);
  }

  // Parses the options; false when an option's length runs past the header or is
  // malformed for its kind (the segment is then dropped as kTcpBadOptions).
  bool parse_options(TcpOptions& out) const {
    // The options of nearly every segment of a connection with timestamps: NOP, NOP,
    // Timestamps, the layout RFC 7323 (appendix A) recommends. Read in place; any other
    // layout takes the general loop.
    if (header_len() == kMinHeaderLen + 12 &&
        load_be32(b_.data() + kMinHeaderLen) == kNopNopTimestamp) {
      out.ts_val = load_be32(b_.data() + kMinHeaderLen + 4);
      out.ts_ecr = load_be32(b_.data() + kMinHeaderLen + 8);
      return true;
    }
    // The options of a SYN or SYN,ACK as Linux and this stack send them: MSS, SACK
    // permitted, Timestamps, NOP, Window scale (20 bytes). Read in place as well.
    if (header_len() == kMinHeaderLen + 20 &&
        load_be32(b_.data() + kMinHeaderLen + 4) == kSackPermTimestamp &&
        load_be16(b_.data() + kMinHeaderLen) == kMssHead &&
        (load_be32(b_.data() + kMinHeaderLen + 16) >> 8) == kNopWscaleHead) {
      const uint8_t* o = b_.data() + kMinHeaderLen;
      out.mss = load_be16(o + 2);
      out.sack_permitted = true;
      out.ts_val = load_be32(o + 8);
      out.ts_ecr = load_be32(o + 12);
      out.wscale = o[19];
      return true;
    }
    return parse_options_general(out);
  }

 private:
  static constexpr uint32_t kNopNopTimestamp = 0x0101080a;
  static constexpr uint32_t kSackPermTimestamp = 0x0402080a;  // SACK-permitted(2), TS kind, 10
  static constexpr uint16_t kMssHead = 0x0204;                // MSS kind, length 4
  static constexpr uint32_t kNopWscaleHead = 0x010303;        // NOP, Window scale kind, length 3
  bool parse_options_general(TcpOptions& out) const;

  explicit TcpView(std::span<const uint8_t> b) : b_(b) {}
  std::span<const uint8_t> b_;
};

// What to write into a segment header.
struct TcpRepr {
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  SeqNum seq;
  SeqNum ack;
  uint8_t flags = 0;
  uint16_t window = 0;  // already scaled down
  // Options to carry (each only when set).
  std::optional<uint16_t> mss;
  std::optional<uint8_t> wscale;
  bool sack_permitted = false;
  std::optional<uint32_t> ts_val;
  uint32_t ts_ecr = 0;
  uint8_t sack_count = 0;
  std::array<SackBlock, 4> sack{};

  // Header length including options, padded to a multiple of 4 (at most 60).
  size_t header_len() const;
};

// The fixed 20 bytes of the header, `hl` bytes long in all, with a zero checksum.
inline void emit_tcp_fixed(uint8_t* out, const TcpRepr& r, size_t hl) {
  store_be16(out + TcpView::kSrcPortOff, r.src_port);
  store_be16(out + TcpView::kDstPortOff, r.dst_port);
  store_be32(out + TcpView::kSeqOff, r.seq.raw());
  store_be32(out + TcpView::kAckOff, r.ack.raw());
  out[TcpView::kDataOffOff] = static_cast<uint8_t>((hl / 4) << 4);
  out[TcpView::kFlagsOff] = r.flags;
  store_be16(out + TcpView::kWindowOff, r.window);
  store_be16(out + TcpView::kChecksumOff, 0);
  store_be16(out + TcpView::kUrgentOff, 0);
}

// The Timestamps option (RFC 7323 section 3), 12 bytes at `p` with the two bytes in front
// of it (NOP padding, or SACK-permitted).
inline void emit_timestamps(uint8_t* p, uint8_t lead0, uint8_t lead1, uint32_t ts_val,
                            uint32_t ts_ecr) {
  p[0] = lead0;
  p[1] = lead1;
  p[2] = tcpopt::kTimestamp;
  p[3] = 10;
  store_be32(p + 4, ts_val);
  store_be32(p + 8, ts_ecr);
}

// Writes header + options with a zero checksum; returns the header length.
size_t emit_tcp(uint8_t* out, const TcpRepr& r);

// emit_tcp() for a header without MSS, window scale, SACK-permitted or SACK blocks (nearly
// every segment after the handshake), inline: the fixed header, then NOP, NOP, Timestamps
// (the layout of RFC 7323 appendix A) when ts_val is set. Returns the header length.
inline size_t emit_tcp_plain(uint8_t* out, const TcpRepr& r) {
  const size_t hl = TcpView::kMinHeaderLen + (r.ts_val ? 12 : 0);
  emit_tcp_fixed(out, r, hl);
  if (r.ts_val)
    emit_timestamps(out + TcpView::kMinHeaderLen, tcpopt::kNop, tcpopt::kNop, *r.ts_val, r.ts_ecr);
  return hl;
}

// emit_tcp() for a SYN or SYN,ACK with every option (MSS, SACK-permitted, Timestamps, NOP,
// Window scale: Linux's layout, which parse_options() reads in place), inline: two per
// connection. r.mss, r.ts_val and r.wscale are set, r.sack_permitted true, no SACK
// blocks. Returns the header length, 40.
inline size_t emit_tcp_syn(uint8_t* out, const TcpRepr& r) {
  constexpr size_t hl = TcpView::kMinHeaderLen + 20;
  emit_tcp_fixed(out, r, hl);
  uint8_t* p = out + TcpView::kMinHeaderLen;
  p[0] = tcpopt::kMss;
  p[1] = 4;
  store_be16(p + 2, *r.mss);
  emit_timestamps(p + 4, tcpopt::kSackPermitted, 2, *r.ts_val, r.ts_ecr);
  p[16] = tcpopt::kNop;
  p[17] = tcpopt::kWscale;
  p[18] = 3;
  p[19] = *r.wscale;
  return hl;
}

}  // namespace ws::wire
