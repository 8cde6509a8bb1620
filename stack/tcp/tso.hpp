// Sizing TCP segmentation offload (TSO) super-segments. The port cuts a
// super-segment into segments of one MSS each and copies the header into every
// one, so a super-segment carries a whole multiple of the MSS: none of the
// segments it becomes is a runt, and the tail of the data (less than an MSS, or
// whatever the windows leave) goes out as an ordinary segment.
#pragma once

#include <algorithm>
#include <cstdint>

#include "stack/tcp/mss.hpp"

namespace ws::tcp {

// Largest IPv4 packet: the total length field is 16 bits (RFC 791 3.1).
inline constexpr uint32_t kMaxIpv4Packet = 65535;
inline constexpr uint32_t kEthernetHeaderLen = 14;

// Payload bytes for the next super-segment, or 0 when one would carry fewer than
// two segments (then an ordinary segment is cheaper). `avail`: bytes the data and
// both windows allow now; `mss`: payload per segment; `tcp_header_len`: the
// header (options included) every segment repeats; `tso_max`: the largest IPv4
// packet the port cuts (0: no TSO).
constexpr uint32_t tso_payload(uint32_t avail, uint32_t mss, uint32_t tcp_header_len,
                               uint32_t tso_max) {
  uint32_t max_packet = std::min(tso_max, kMaxIpv4Packet);
  if (mss == 0 || max_packet <= kIpv4HeaderLen + tcp_header_len) return 0;
  uint32_t room = max_packet - kIpv4HeaderLen - tcp_header_len;
  uint32_t n = std::min(avail, room) / mss;
  return n >= 2 ? n * mss : 0;
}

// Payload per segment the port cuts: the send MSS, unless the port bounds the
// frames it cuts (`segment_frame_max`, Ethernet header included; 0 = no bound)
// more tightly. 0 when not even one byte fits.
constexpr uint32_t tso_segment(uint32_t mss, uint32_t segment_frame_max, uint32_t tcp_header_len) {
  if (segment_frame_max == 0) return mss;
  uint32_t headers = kEthernetHeaderLen + kIpv4HeaderLen + tcp_header_len;
  if (segment_frame_max <= headers) return 0;
  return std::min(mss, segment_frame_max - headers);
}

}  // namespace ws::tcp
