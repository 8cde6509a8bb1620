#include "stack/wire/ipv4.hpp"

#include "stack/core/checksum.hpp"

namespace ws::wire {

void emit_ipv4(uint8_t* out, const Ipv4Repr& r, bool leave_checksum_zero) {
  out[Ipv4View::kVerIhlOff] = 0x45;
  out[Ipv4View::kTosOff] = r.tos;
  store_be16(out + Ipv4View::kTotalLenOff,
             static_cast<uint16_t>(Ipv4View::kMinHeaderLen + r.payload_len));
  store_be16(out + Ipv4View::kIdOff, r.ident);
  uint16_t ff = static_cast<uint16_t>((r.frag_offset / 8) & Ipv4View::kFragOffsetMask);
  if (r.dont_fragment) ff |= Ipv4View::kFlagDf;
  if (r.more_fragments) ff |= Ipv4View::kFlagMf;
  store_be16(out + Ipv4View::kFlagsFragOff, ff);
  out[Ipv4View::kTtlOff] = r.ttl;
  out[Ipv4View::kProtoOff] = r.protocol;
  store_be16(out + Ipv4View::kChecksumOff, 0);
  store_be32(out + Ipv4View::kSrcOff, r.src.v);
  store_be32(out + Ipv4View::kDstOff, r.dst.v);
  if (!leave_checksum_zero) {
    store_be16(out + Ipv4View::kChecksumOff, internet_checksum({out, Ipv4View::kMinHeaderLen}));
  }
}

}  // namespace ws::wire
