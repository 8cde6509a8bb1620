// The Internet checksum (RFC 1071), incremental update (RFC 1624) and the IPv4 and
// IPv6 pseudo-header sums used by UDP, TCP and ICMPv6 (RFC 768, RFC 9293 3.1, RFC 8200 8.1).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "stack/core/addr.hpp"

namespace ws {

// One's-complement sum of `data` added to `initial`, folded to 32 bits but not
// complemented. Chain calls to sum discontiguous pieces; an odd-length piece must
// be the last one (as in every header layout we use).
uint32_t csum_partial(std::span<const uint8_t> data, uint32_t initial = 0);

// Copies `src` to `dst` and returns the same sum as csum_partial(src): one pass over
// the bytes instead of a copy and then a checksum pass (the software TX path at
// large MTUs is bound by passes over the payload).
uint32_t csum_copy(uint8_t* dst, std::span<const uint8_t> src);

// Adds `piece`, the partial sum of bytes that start `offset` bytes into the summed
// region, to `sum`. A piece at an odd offset has its bytes in the other halves of
// the 16-bit words, so its (folded) sum is byte-swapped first (RFC 1071 section
// 2(B), byte order independence). This lifts csum_partial's "odd piece last" rule.
inline uint32_t csum_add_at(uint32_t sum, uint32_t piece, size_t offset) {
  if ((offset & 1) != 0) {
    piece = (piece & 0xffff) + (piece >> 16);
    piece = (piece & 0xffff) + (piece >> 16);
    piece = ((piece & 0xff) << 8) | (piece >> 8);
  }
  uint64_t s = static_cast<uint64_t>(sum) + piece;
  return static_cast<uint32_t>((s & 0xffffffffu) + (s >> 32));
}

// Fold a partial sum to 16 bits and complement it: the value to store in a header.
inline uint16_t csum_fold(uint32_t sum) {
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffff);
}

// Folds a partial sum to 16 bits without complementing: the form NICs expect
// pre-seeded in the L4 checksum field for checksum offload.
inline uint16_t csum_fold_raw(uint32_t s) {
  s = (s & 0xffff) + (s >> 16);
  s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(s);
}

// csum_partial of `n` bytes, `n` a multiple of 4 up to 60 (an IPv4 header, a TCP header with
// its options: on every packet in and out), inline and folded to 16 bits: native 32-bit words
// summed with deferred carries (RFC 1071 section 2), folded, and swapped once into network
// order (byte order independence). A constant `n` unrolls.
inline uint32_t csum_words(const uint8_t* p, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; i += 4) {
    uint32_t w;
    std::memcpy(&w, p + i, 4);
    s += w;
  }
  s = (s & 0xffffffffu) + (s >> 32);
  s = (s & 0xffff) + (s >> 16);
  s = (s & 0xffff) + (s >> 16);
  s = (s & 0xffff) + (s >> 16);
  if constexpr (std::endian::native == std::endian::little) s = ((s & 0xff) << 8) | (s >> 8);
  return static_cast<uint32_t>(s);
}

// csum_partial of exactly 20 bytes (an IPv4 header without options).
inline uint32_t csum_20(const uint8_t* p) { return csum_words(p, 20); }

// csum_partial(d, initial), inline for a piece of 4-byte words up to 60 bytes (a TCP header,
// and the whole of a segment without data, on every frame in and out): the same sum once
// folded, without csum_partial's call and length dispatch.
inline uint32_t csum_short(std::span<const uint8_t> d, uint32_t initial) {
  if (d.size() % 4 == 0 && d.size() <= 60)
    return csum_add_at(initial, csum_words(d.data(), d.size()), 0);
  return csum_partial(d, initial);
}

// Checksum of a complete buffer (e.g. an IPv4 header): 0 when verifying a correct one.
inline uint16_t internet_checksum(std::span<const uint8_t> data) {
  if (data.size() == 20) return csum_fold(csum_20(data.data()));
  return csum_fold(csum_partial(data));
}

// Sum of the IPv4 pseudo header: source, destination, zero+protocol, L4 length.
inline uint32_t ipv4_pseudo_sum(Ipv4Addr src, Ipv4Addr dst, uint8_t proto, uint16_t l4_len) {
  uint64_t s = (src.v >> 16) + (src.v & 0xffff) + (dst.v >> 16) + (dst.v & 0xffff) + proto + l4_len;
  s = (s & 0xffffffff) + (s >> 32);
  return static_cast<uint32_t>(s);
}

// Sum of the pseudo header of either family: the IPv4 one above, or the IPv6 one
// (RFC 8200 8.1): source, destination, 32-bit upper-layer length, next header. Used by
// ICMPv6, UDP and TCP.
inline uint32_t pseudo_sum(const IpAddr& src, const IpAddr& dst, uint8_t proto, uint32_t l4_len) {
  if (src.is_v4()) return ipv4_pseudo_sum(src.v4(), dst.v4(), proto, static_cast<uint16_t>(l4_len));
  // The addresses summed as 64-bit words with end-around carry: 2^16, 2^32 and 2^64 are all
  // 1 modulo 0xffff, so once folded this equals the sum of their 16-bit words (RFC 1071
  // section 2(C), summing in wider words).
  auto add = [](uint64_t a, uint64_t b) {
    const uint64_t r = a + b;
    return r + static_cast<uint64_t>(r < a);
  };
  uint64_t s = add(add(src.hi, src.lo), add(dst.hi, dst.lo));
  s = add(s, uint64_t{l4_len} + proto);
  s = (s & 0xffffffff) + (s >> 32);
  s = (s & 0xffffffff) + (s >> 32);
  return static_cast<uint32_t>(s);
}

inline uint32_t ipv6_pseudo_sum(const Ipv6Addr& src, const Ipv6Addr& dst, uint8_t next_header,
                                uint32_t l4_len) {
  return pseudo_sum(IpAddr(src), IpAddr(dst), next_header, l4_len);
}

// RFC 1624 eqn. 3: new checksum after one 16-bit field changes from old_v to new_v.
inline uint16_t csum_update16(uint16_t old_csum, uint16_t old_v, uint16_t new_v) {
  uint32_t s = static_cast<uint16_t>(~old_csum) +
               static_cast<uint32_t>(static_cast<uint16_t>(~old_v)) + new_v;
  return csum_fold(s);
}

}  // namespace ws
