#include "stack/wire/tcp.hpp"

namespace ws::wire {

bool TcpView::parse_options_general(TcpOptions& out) const {
  auto o = options_bytes();
  size_t i = 0;
  while (i < o.size()) {
    uint8_t kind = o[i];
    if (kind == tcpopt::kEnd) break;
    if (kind == tcpopt::kNop) {
      ++i;
      continue;
    }
    if (i + 1 >= o.size()) return false;
    uint8_t len = o[i + 1];
    if (len < 2 || i + len > o.size()) return false;
    const uint8_t* p = o.data() + i + 2;
    switch (kind) {
      case tcpopt::kMss:
        if (len != 4) return false;
        out.mss = load_be16(p);
        break;
      case tcpopt::kWscale:
        if (len != 3) return false;
        out.wscale = p[0];
        break;
      case tcpopt::kSackPermitted:
        if (len != 2) return false;
        out.sack_permitted = true;
        break;
      case tcpopt::kTimestamp:
        if (len != 10) return false;
        out.ts_val = load_be32(p);
        out.ts_ecr = load_be32(p + 4);
        break;
      case tcpopt::kSack: {
        if (len < 10 || (len - 2) % 8 != 0) return false;
        size_t n = static_cast<size_t>(len - 2) / 8;
        out.sack_count = 0;
        for (size_t k = 0; k < n && k < out.sack.size(); ++k) {
          out.sack[k] = SackBlock{SeqNum(load_be32(p + k * 8)), SeqNum(load_be32(p + k * 8 + 4))};
          ++out.sack_count;
        }
        break;
      }
      default:
        break;  // unknown option: skip by length (RFC 9293 section 3.2)
    }
    i += len;
  }
  return true;
}

size_t TcpRepr::header_len() const {
  size_t n = TcpView::kMinHeaderLen;
  if (mss) n += 4;
  if (ts_val || sack_permitted) n += ts_val ? 12 : 4;
  if (wscale) n += 4;
  // SACK blocks are clipped to the room left, exactly as emit_tcp does.
  size_t k = sack_count;
  while (k > 0 && n + 4 + k * 8 > TcpView::kMaxHeaderLen) --k;
  if (k > 0) n += 4 + k * 8;
  return n;
}

size_t emit_tcp(uint8_t* out, const TcpRepr& r) {
  uint8_t* p = out + TcpView::kMinHeaderLen;
  uint8_t* const end = out + TcpView::kMaxHeaderLen;
  if (r.mss) {
    p[0] = tcpopt::kMss;
    p[1] = 4;
    store_be16(p + 2, *r.mss);
    p += 4;
  }
  if (r.ts_val) {
    // SACK-permitted rides in the two bytes that would otherwise be NOP padding.
    if (r.sack_permitted)
      emit_timestamps(p, tcpopt::kSackPermitted, 2, *r.ts_val, r.ts_ecr);
    else
      emit_timestamps(p, tcpopt::kNop, tcpopt::kNop, *r.ts_val, r.ts_ecr);
    p += 12;
  } else if (r.sack_permitted) {
    p[0] = tcpopt::kNop;
    p[1] = tcpopt::kNop;
    p[2] = tcpopt::kSackPermitted;
    p[3] = 2;
    p += 4;
  }
  if (r.wscale) {
    p[0] = tcpopt::kNop;
    p[1] = tcpopt::kWscale;
    p[2] = 3;
    p[3] = *r.wscale;
    p += 4;
  }
  if (r.sack_count > 0) {
    size_t room = static_cast<size_t>(end - p);
    size_t n = r.sack_count;
    while (n > 0 && 4 + n * 8 > room) --n;
    if (n > 0) {
      p[0] = tcpopt::kNop;
      p[1] = tcpopt::kNop;
      p[2] = tcpopt::kSack;
      p[3] = static_cast<uint8_t>(2 + n * 8);
      p += 4;
      for (size_t k = 0; k < n; ++k) {
        store_be32(p, r.sack[k].left.raw());
        store_be32(p + 4, r.sack[k].right.raw());
        p += 8;
      }
    }
  }
  const auto hl = static_cast<size_t>(p - out);
  emit_tcp_fixed(out, r, hl);
  return hl;
}

}  // namespace ws::wire
