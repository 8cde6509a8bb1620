// The L4 checksum of a frame being committed, for the output paths of both families
// (ipv4_output.cpp, ipv6_output.cpp): written by software, or seeded for the port to finish.
#pragma once

#include <cstddef>
#include <cstdint>

#include "stack/core/checksum.hpp"
#include "stack/core/l4_output.hpp"
#include "stack/core/packet.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/udp.hpp"

namespace ws::detail {

// Software L4 checksum input: the pseudo-header sum plus every L4 byte. The part
// a TxWriter summed while copying the payload is not read again.
inline uint32_t l4_sum(const L4Frame& f, uint32_t pseudo) {
  if (f.payload_summed) {
    // The header in front of a summed payload: a TCP header (20 to 60 bytes, a multiple
    // of 4) or UDP's 8, summed inline.
    const uint32_t h = f.payload_off;
    return csum_add_at(csum_short(f.l4.first(h), pseudo), f.payload_sum, h);
  }
  uint32_t s = csum_short(f.l4, pseudo);
  size_t off = f.l4.size();
  for (const TxSeg& g : f.more) {
    s = csum_add_at(s, csum_partial({g.data, g.len}), off);
    off += g.len;
  }
  return s;
}

// Stack::fill_l4_checksum, inline for the commits of both families (every frame sent). `pseudo`:
// the pseudo header's sum, with the L4 length unless `tso`.
[[gnu::always_inline]] inline void fill_l4(const TxOffloads& o, L4Frame& f, bool tso,
                                           bool allow_offload, uint32_t pseudo) {
  TxBuf& b = f.buf;
  size_t csum_off = 0;
  bool l4_offload = false;
  if (f.proto == wire::kIpProtoUdp) {
    csum_off = wire::UdpView::kChecksumOff;
    l4_offload = allow_offload && o.udp_cksum;
    if (l4_offload) b.flags |= kTxUdpCksum;
  } else if (f.proto == wire::kIpProtoTcp) {
    csum_off = 16;  // TcpView::kChecksumOff
    l4_offload = allow_offload && (o.tcp_cksum || tso);
    if (l4_offload) b.flags |= kTxTcpCksum;
  }
  if (csum_off == 0) return;
  if (l4_offload) {
    store_be16(f.l4.data() + csum_off, csum_fold_raw(pseudo));
  } else {
    uint16_t c = csum_fold(l4_sum(f, pseudo));
    // RFC 768: a computed zero is sent as all ones (zero means "no checksum").
    if (c == 0 && f.proto == wire::kIpProtoUdp) c = 0xffff;
    store_be16(f.l4.data() + csum_off, c);
  }
}
}  // namespace ws::detail
