// How transport protocols (UDP, TCP) send: reserve a frame with room for the
// L4 header and payload, write them, then commit. The IP layer fills the IPv4
// header, the L4 checksum (or asks the NIC to), resolves the next hop and sends.
#pragma once

#include <cstdint>
#include <span>

#include "stack/core/addr.hpp"
#include "stack/core/packet.hpp"
#include "stack/core/time.hpp"

namespace ws {

struct TsoLimits {
  uint32_t packet = 0;
  uint32_t segment_frame = 0;
};

struct L4Frame {
  std::span<uint8_t> l4;  // where the L4 header and payload go (exactly l4_len bytes)
  TxBuf buf;              // the platform buffer holding the whole frame
  uint16_t iface = 0;     // interface index the frame leaves through
  Ipv4Addr src;
  Ipv4Addr dst;
  uint8_t proto = 0;
  bool dont_fragment = true;
};

class L4Output {
 public:
  virtual ~L4Output() = default;
  // Reserves a frame for `l4_len` bytes to `dst`. False when there is no route or
  // no buffer; the reason has been counted. `src` any = the interface's address.
  virtual bool begin(Ipv4Addr src, Ipv4Addr dst, uint8_t proto, uint32_t l4_len, L4Frame& out) = 0;
  // Writes the IPv4 header and the L4 checksum (the checksum field in l4 must be
  // zero), then sends or queues behind ARP resolution.
  virtual void commit(L4Frame& f, Instant now) = 0;
  // Gives back a frame that will not be sent.
  virtual void abort(L4Frame& f) = 0;
  // MTU of the interface that routes to dst (0 when unroutable).
  virtual uint32_t mtu_to(Ipv4Addr dst) const = 0;
  // Our address on the interface that routes to dst (any when unroutable).
  virtual Ipv4Addr source_for(Ipv4Addr dst) const = 0;
  // TCP segmentation offload (TSO) toward dst: the largest IPv4 packet, header
  // included, that the port cuts into segments itself (0 when the port has no TSO
  // or it is switched off and TCP must segment), and the largest frame, Ethernet
  // header included, of a segment it cuts (0: MTU + 14).
  virtual TsoLimits tso_limits_to(Ipv4Addr dst) const {
    (void)dst;
    return {};
  }
  // Like begin() for a TCP super-segment: `l4_len` bytes (a `header_len`-byte TCP
  // header and its payload) that the port cuts into segments of `segment_payload`
  // bytes each, replicating the header. Only within tso_limits_to(dst).
  virtual bool begin_tso(Ipv4Addr src, Ipv4Addr dst, uint32_t header_len, uint32_t l4_len,
                         uint32_t segment_payload, L4Frame& out) {
    (void)src, (void)dst, (void)header_len, (void)l4_len, (void)segment_payload, (void)out;
    return false;
  }
  // Free transmit buffers on that interface, for backpressure decisions.
  virtual uint32_t free_buffers_to(Ipv4Addr dst) const = 0;
  // The slow path for datagrams that may not fit one frame: sends `head` followed
  // by `body` (an L4 header and payload whose checksum is already complete) as one
  // IPv4 datagram, cut into fragments (RFC 791 section 3.2) when it exceeds the
  // interface MTU, unless `dont_fragment` (then it is dropped as frame_too_long).
  // No checksum offload is used. False when nothing was sent; the reason is counted.
  // The default (outputs that cannot fragment, such as test doubles) sends nothing.
  virtual bool send_datagram(Ipv4Addr src, Ipv4Addr dst, uint8_t proto,
                             std::span<const uint8_t> head, std::span<const uint8_t> body,
                             bool dont_fragment, Instant now) {
    (void)src, (void)dst, (void)proto, (void)head, (void)body, (void)dont_fragment, (void)now;
    return false;
  }
};

}  // namespace ws
