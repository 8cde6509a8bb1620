// How transport protocols (UDP, TCP) send: reserve a frame with room for the
// L4 header and payload, write them, then commit. The IP layer fills the IPv4 or IPv6
// header, the L4 checksum (or asks the NIC to), resolves the next hop and sends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "stack/core/addr.hpp"
#include "stack/core/packet.hpp"
#include "stack/core/time.hpp"
#include "stack/core/tx_writer.hpp"

namespace ws {

namespace ipsec {
struct OutboundSa;
}

// The fixed IP header in front of an L4 header to `dst`: 20 bytes (IPv4 without
// options) or 40 (IPv6 without extension headers).
constexpr uint32_t ip_header_len(const IpAddr& dst) { return dst.is_v4() ? 20 : 40; }

struct TsoLimits {
  uint32_t packet = 0;
  uint32_t segment_frame = 0;
};

struct L4Frame {
  // Where the L4 header and payload go: all l4_len bytes, or for a gathered frame
  // (begin_gather, begin_tso) the first part of them, at least the header; the
  // rest follows in `more` (l4_size() counts both). Write the payload with writer().
  std::span<uint8_t> l4;
  std::span<const TxSeg> more;
  uint32_t more_len = 0;
  // Set by begin_gather when the L4 checksum is computed in software: writer()
  // then sums the payload while copying it, and payload_written() hands the sum
  // to commit(), which adds only the header.
  bool sum_payload = false;
  bool payload_summed = false;
  uint32_t payload_off = 0;
  uint32_t payload_sum = 0;
  TxBuf buf;           // the platform buffer holding the whole frame
  uint16_t iface = 0;  // interface index the frame leaves through
  IpAddr src;
  IpAddr dst;
  uint8_t proto = 0;
  bool dont_fragment = true;
  // IPv4: the route begin() looked up, kept for commit() (one lookup per frame).
  bool broadcast = false;
  IpAddr next_hop;
  // Set by the IP layer when the frame is laid out for ESP: commit() seals it for this SA.
  ipsec::OutboundSa* esp = nullptr;

  uint32_t l4_size() const { return static_cast<uint32_t>(l4.size()) + more_len; }
  // Writes L4 bytes from offset `off` (the end of the L4 header) on.
  TxWriter writer(uint32_t off) const {
    return TxWriter(off <= l4.size() ? l4.subspan(off) : std::span<uint8_t>{}, more, sum_payload);
  }
  // Records what `w`, started at `off`, wrote up to the end of the frame.
  void payload_written(uint32_t off, const TxWriter& w) {
    payload_summed = w.summing() && off + w.written() == l4_size() && off <= l4.size();
    payload_off = off;
    payload_sum = w.sum();
  }
};

// One datagram of a burst (L4Output::send_udp_burst): its UDP header (checksum field zero)
// and its payload.
struct L4Datagram {
  std::span<const uint8_t> header;
  std::span<const uint8_t> payload;
};

class L4Output {
 public:
  virtual ~L4Output() = default;
  // Reserves a frame for `l4_len` bytes to `dst`. False when there is no route or
  // no buffer; the reason has been counted. `src` any = the interface's address.
  virtual bool begin(IpAddr src, IpAddr dst, uint8_t proto, uint32_t l4_len, L4Frame& out) = 0;
  // Like begin() for a frame whose `header_len`-byte L4 header is written into
  // f.l4 and whose payload goes through f.writer(header_len): on a port with
  // small buffers the payload lands in the chain's segments directly. The
  // default is begin() (one contiguous l4).
  virtual bool begin_gather(IpAddr src, IpAddr dst, uint8_t proto, uint32_t header_len,
                            uint32_t l4_len, L4Frame& out) {
    (void)header_len;
    return begin(src, dst, proto, l4_len, out);
  }
  // Writes the IP header (IPv4 or IPv6, by the addresses) and the L4 checksum (the checksum field
  // in l4 must be zero), then sends or queues behind ARP resolution.
  virtual void commit(L4Frame& f, Instant now) = 0;
  // Gives back a frame that will not be sent.
  virtual void abort(L4Frame& f) = 0;
  // MTU of the interface that routes to dst (0 when unroutable).
  virtual uint32_t mtu_to(IpAddr dst) const = 0;
  // Our address on the interface that routes to dst (any when unroutable).
  virtual IpAddr source_for(IpAddr dst) const = 0;
  // True while source_for(dst) is any only because the address that would serve is
  // still tentative (RFC 4862 5.4: not used before duplicate address detection ends).
  virtual bool source_pending(IpAddr /*dst*/) const { return false; }
  // TCP segmentation offload (TSO) toward dst: the largest IPv4 packet, header
  // included, that the port cuts into segments itself (0 when the port has no TSO
  // or it is switched off and TCP must segment), and the largest frame, Ethernet
  // header included, of a segment it cuts (0: MTU + 14).
  virtual TsoLimits tso_limits_to(IpAddr dst) const {
    (void)dst;
    return {};
  }
  // Like begin_gather() for a TCP super-segment: `l4_len` bytes (a `header_len`-byte
  // TCP header and its payload) that the port cuts into segments of
  // `segment_payload` bytes each, replicating the header. Only within
  // tso_limits_to(dst).
  virtual bool begin_tso(IpAddr src, IpAddr dst, uint32_t header_len, uint32_t l4_len,
                         uint32_t segment_payload, L4Frame& out) {
    (void)src, (void)dst, (void)header_len, (void)l4_len, (void)segment_payload, (void)out;
    return false;
  }
  // Sends UDP datagrams from our address to `dst` as one burst, with DF clear: the route,
  // the next hop and the frame buffers are had once for all of them, and the headers are
  // written from one template. Returns how many were sent, from the front; when buffers
  // ran out before the end, the first datagram left over is counted (no_mbuf), as a
  // sender stopping there one by one would have it. None when the burst cannot go this
  // way (no route, the next hop not resolved, IPv6, ESP, a datagram larger than one frame
  // or buffer): nothing was sent or counted, and the caller sends them one by one. The
  // default (test doubles) is none.
  virtual std::optional<size_t> send_udp_burst(IpAddr dst, std::span<const L4Datagram> d,
                                               Instant now) {
    (void)dst, (void)d, (void)now;
    return std::nullopt;
  }
  // Free transmit buffers on that interface, for backpressure decisions.
  virtual uint32_t free_buffers_to(IpAddr dst) const = 0;
  // The slow path for datagrams that may not fit one frame: sends `head` followed
  // by `body` (an L4 header and payload whose checksum is already complete) as one
  // IPv4 datagram, cut into fragments (RFC 791 section 3.2) when it exceeds the
  // interface MTU, unless `dont_fragment` (then it is dropped as frame_too_long).
  // No checksum offload is used. False when nothing was sent; the reason is counted.
  // The default (outputs that cannot fragment, such as test doubles) sends nothing.
  virtual bool send_datagram(IpAddr src, IpAddr dst, uint8_t proto, std::span<const uint8_t> head,
                             std::span<const uint8_t> body, bool dont_fragment, Instant now) {
    (void)src, (void)dst, (void)proto, (void)head, (void)body, (void)dont_fragment, (void)now;
    return false;
  }
};

}  // namespace ws
