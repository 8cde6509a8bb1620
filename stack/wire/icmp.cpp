#include "stack/wire/icmp.hpp"

#include "stack/core/checksum.hpp"

namespace ws::wire {

void emit_icmp(uint8_t* out, uint8_t type, uint8_t code, uint32_t rest, size_t body_len) {
  out[IcmpView::kTypeOff] = type;
  out[IcmpView::kCodeOff] = code;
  store_be16(out + IcmpView::kChecksumOff, 0);
  store_be32(out + 4, rest);
  store_be16(out + IcmpView::kChecksumOff,
             internet_checksum({out, IcmpView::kHeaderLen + body_len}));
}

}  // namespace ws::wire
