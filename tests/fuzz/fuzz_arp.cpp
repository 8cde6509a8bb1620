// ARP body parsing: the error reported matches the first failing check, and an accepted
// body re-emits byte for byte from its parsed fields.
#include <cstring>

#include "stack/wire/arp.hpp"
#include "tests/fuzz/seeds.hpp"

namespace {

std::vector<ws::fuzz::Bytes> arp_seeds() {
  namespace td = ws::testdata;
  return ws::fuzz::without_prefix({td::kArpRequest, td::kArpReply}, td::kEthLen);
}

}  // namespace

WS_FUZZ_TARGET(arp, arp_seeds) {
  using ws::wire::ArpError;
  using ws::wire::ArpView;
  ArpError err = ArpError::kNone;
  auto a = ArpView::parse(data, &err);
  if (data.size() < ArpView::kLen) {
    WS_FUZZ_CHECK(!a && err == ArpError::kTruncated);
    return;
  }
  const bool well_formed = ws::load_be16(data.data()) == 1 &&
                           ws::load_be16(data.data() + 2) == 0x0800 && data[4] == 6 && data[5] == 4;
  if (!well_formed) {
    WS_FUZZ_CHECK(!a && err == ArpError::kBadFormat);
    return;
  }
  WS_FUZZ_CHECK(a && err == ArpError::kNone);
  ws::wire::ArpRepr r{static_cast<ws::wire::ArpOp>(a->op()), a->sender_mac(), a->sender_ip(),
                      a->target_mac(), a->target_ip()};
  uint8_t out[ArpView::kLen];
  WS_FUZZ_CHECK(ws::wire::emit_arp(out, r) == ArpView::kLen);
  WS_FUZZ_CHECK(std::memcmp(out, data.data(), ArpView::kLen) == 0);
}
