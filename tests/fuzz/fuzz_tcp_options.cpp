// A TCP segment: the header checks and the option parser. Accepted options must survive
// a round trip through TcpRepr/emit_tcp/parse_options (SACK blocks clipped to the room
// left), and TcpRepr::header_len() must agree with what emit_tcp writes.
#include <algorithm>
#include <cstring>

#include "stack/core/bytes.hpp"
#include "stack/wire/tcp.hpp"
#include "tests/fuzz/seeds.hpp"

namespace {

std::vector<ws::fuzz::Bytes> tcp_seeds() {
  auto seeds = ws::fuzz::without_prefix(ws::fuzz::captured_tcp_frames(),
                                        ws::testdata::kEthLen + ws::testdata::kIpLen);
  // An ACK as Linux sends it during loss recovery: NOP NOP TS, NOP NOP SACK with 3 blocks.
  ws::fuzz::Bytes sack(seeds.back().begin(), seeds.back().begin() + 32);
  const uint8_t opt[4] = {1, 1, 5, 26};
  sack.insert(sack.end(), opt, opt + 4);
  for (uint32_t k = 0; k < 3; ++k) {
    uint8_t blk[8];
    ws::store_be32(blk, 0x3ed458a4u + 1448 * (2 * k + 1));
    ws::store_be32(blk + 4, 0x3ed458a4u + 1448 * (2 * k + 2));
    sack.insert(sack.end(), blk, blk + 8);
  }
  sack[12] = static_cast<uint8_t>((sack.size() / 4) << 4);
  seeds.push_back(sack);
  return seeds;
}

}  // namespace

WS_FUZZ_TARGET(tcp_options, tcp_seeds) {
  using ws::wire::TcpOptions;
  using ws::wire::TcpRepr;
  using ws::wire::TcpView;
  TcpView::Error err = TcpView::Error::kNone;
  auto t = TcpView::parse(data, &err);
  if (data.size() < TcpView::kMinHeaderLen) {
    WS_FUZZ_CHECK(!t && err == TcpView::Error::kTruncated);
    return;
  }
  const size_t doff = size_t{static_cast<uint8_t>(data[12] >> 4)} * 4;
  if (doff < TcpView::kMinHeaderLen || doff > data.size()) {
    WS_FUZZ_CHECK(!t && err == TcpView::Error::kBadDataOffset);
    return;
  }
  WS_FUZZ_CHECK(t && err == TcpView::Error::kNone);
  WS_FUZZ_CHECK(t->header_len() == doff);
  WS_FUZZ_CHECK(t->options_bytes().size() == doff - TcpView::kMinHeaderLen);
  WS_FUZZ_CHECK(t->payload().size() == data.size() - doff);

  TcpOptions o;
  if (!t->parse_options(o)) return;
  WS_FUZZ_CHECK(o.sack_count <= o.sack.size());

  TcpRepr r;
  r.src_port = t->src_port();
  r.dst_port = t->dst_port();
  r.seq = t->seq();
  r.ack = t->ack();
  r.flags = t->flags();
  r.window = t->window();
  r.mss = o.mss;
  r.wscale = o.wscale;
  r.sack_permitted = o.sack_permitted;
  r.ts_val = o.ts_val;
  r.ts_ecr = o.ts_val ? o.ts_ecr : 0;
  r.sack_count = o.sack_count;
  r.sack = o.sack;

  uint8_t out[TcpView::kMaxHeaderLen + 4];
  std::memset(out, 0xee, sizeof out);
  const size_t hl = ws::wire::emit_tcp(out, r);
  WS_FUZZ_CHECK(hl == r.header_len());
  WS_FUZZ_CHECK(hl % 4 == 0 && hl >= TcpView::kMinHeaderLen && hl <= TcpView::kMaxHeaderLen);
  WS_FUZZ_CHECK(out[TcpView::kMaxHeaderLen] == 0xee);

  auto t2 = TcpView::parse(std::span<const uint8_t>(out, hl));
  WS_FUZZ_CHECK(t2.has_value());
  WS_FUZZ_CHECK(t2->header_len() == hl);
  WS_FUZZ_CHECK(t2->src_port() == r.src_port && t2->dst_port() == r.dst_port);
  WS_FUZZ_CHECK(t2->seq() == r.seq && t2->ack() == r.ack);
  WS_FUZZ_CHECK(t2->flags() == r.flags && t2->window() == r.window);
  TcpOptions o2;
  WS_FUZZ_CHECK(t2->parse_options(o2));
  WS_FUZZ_CHECK(o2.mss == o.mss);
  WS_FUZZ_CHECK(o2.wscale == o.wscale);
  WS_FUZZ_CHECK(o2.sack_permitted == o.sack_permitted);
  WS_FUZZ_CHECK(o2.ts_val == o.ts_val);
  if (o.ts_val) WS_FUZZ_CHECK(o2.ts_ecr == o.ts_ecr);
  WS_FUZZ_CHECK(o2.sack_count <= o.sack_count);
  for (size_t k = 0; k < o2.sack_count; ++k) {
    WS_FUZZ_CHECK(o2.sack[k].left == o.sack[k].left && o2.sack[k].right == o.sack[k].right);
  }
  // Blocks are only dropped for lack of room (8 bytes a block, plus 4 for the first).
  if (o2.sack_count < o.sack_count) {
    WS_FUZZ_CHECK(hl + (o2.sack_count == 0 ? 12u : 8u) > TcpView::kMaxHeaderLen);
  }
}
