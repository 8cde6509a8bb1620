// Ethernet header parsing (untagged and 802.1Q): the view never reads outside the frame,
// rejects exactly the frames too short for their header, and re-emitting the parsed
// fields reproduces the header bytes.
#include <cstring>

#include "stack/wire/ethernet.hpp"
#include "tests/fuzz/seeds.hpp"

namespace {

std::vector<ws::fuzz::Bytes> ethernet_seeds() {
  auto seeds = ws::fuzz::without_prefix(ws::fuzz::captured_frames(), 0);
  // The ICMP echo request with a VLAN 10 tag.
  ws::fuzz::Bytes tagged(ws::testdata::kIcmpEchoRequest.begin(),
                         ws::testdata::kIcmpEchoRequest.end());
  const uint8_t tag[4] = {0x81, 0x00, 0x00, 0x0a};
  tagged.insert(tagged.begin() + 12, tag, tag + 4);
  seeds.push_back(tagged);
  return seeds;
}

}  // namespace

WS_FUZZ_TARGET(ethernet, ethernet_seeds) {
  using ws::wire::EthernetView;
  auto e = EthernetView::parse(data);
  const bool tagged =
      data.size() >= 14 && ws::load_be16(data.data() + 12) == ws::wire::kEtherTypeVlan;
  if (!e) {
    WS_FUZZ_CHECK(data.size() < 14 || (tagged && data.size() < 18));
    return;
  }
  WS_FUZZ_CHECK(e->has_vlan() == tagged);
  WS_FUZZ_CHECK(e->header_len() == (tagged ? 18u : 14u));
  WS_FUZZ_CHECK(e->header_len() <= data.size());
  WS_FUZZ_CHECK(e->payload().size() == data.size() - e->header_len());
  WS_FUZZ_CHECK(e->payload().data() == data.data() + e->header_len());
  WS_FUZZ_CHECK(e->vlan_id() <= 0x0fff);
  if (!tagged) WS_FUZZ_CHECK(e->vlan_tci() == 0);

  uint8_t hdr[18];
  size_t n =
      tagged ? ws::wire::emit_ethernet_vlan(hdr, e->dst(), e->src(), e->vlan_tci(), e->ethertype())
             : ws::wire::emit_ethernet(hdr, e->dst(), e->src(), e->ethertype());
  WS_FUZZ_CHECK(n == e->header_len());
  WS_FUZZ_CHECK(std::memcmp(hdr, data.data(), n) == 0);
}
