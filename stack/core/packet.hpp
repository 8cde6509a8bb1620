// The stack's view of packet buffers. stack/ never sees an rte_mbuf: the data plane
// implements PacketIo over mbufs and tests implement it over heap memory. A TxBuf
// is a frame being built; `handle` is the platform's buffer. A frame larger than
// one platform buffer (a jumbo frame over small mbufs, a TSO super-segment) is
// built one of two ways:
// - gathered (alloc_tx_gather): the headers go into the first segment at `data`
//   and the payload straight into the further segments `segs` lists (TxWriter in
//   tx_writer.hpp), so the payload is copied once, from the send buffer to the
//   chain;
// - contiguously (alloc_tx): the implementation lends a staging area and moves
//   the bytes into its chained buffers in seal() (a second copy), for callers
//   that write the frame as one span (UDP, ICMP, fragments).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ws {

// Transmit offloads a port offers; the stack asks for them per frame.
struct TxOffloads {
  bool ipv4_cksum = false;
  bool udp_cksum = false;
  bool tcp_cksum = false;
  bool tcp_tso = false;
  // With tcp_tso: the largest IPv4 packet (header included) the port cuts into
  // segments, at most 65535 (RFC 791 total length).
  uint32_t tso_max = 0;
  // With tcp_tso: the largest frame (Ethernet header included) of one segment the
  // port cuts, when the port bounds it below MTU + 14 (net_tap counts the headers
  // against its MTU); 0 = MTU + 14.
  uint32_t tso_segment_frame_max = 0;
};

// Requests the stack attaches to a frame; the data plane maps them to mbuf ol_flags.
enum TxFlag : uint32_t {
  kTxIpv4Cksum = 1u << 0,  // NIC fills the IPv4 header checksum
  kTxUdpCksum = 1u << 1,   // NIC fills the UDP checksum (pseudo-header sum pre-seeded)
  kTxTcpCksum = 1u << 2,   // NIC fills the TCP checksum (pseudo-header sum pre-seeded)
  kTxTcpSeg = 1u << 3,     // TSO: NIC cuts the payload into tso_segsz pieces
};

// One piece of a gathered frame beyond its first segment.
struct TxSeg {
  uint8_t* data = nullptr;
  uint32_t len = 0;  // bytes of the frame this segment holds (all of them are written)
};

struct TxBuf {
  uint8_t* data = nullptr;  // first byte of the frame
  uint32_t capacity = 0;    // bytes writable from data (the first segment's share if gathered)
  uint32_t len = 0;         // frame length once built (all segments)
  void* handle = nullptr;   // platform buffer (an rte_mbuf* in the data plane)
  uint32_t flags = 0;       // TxFlag bits
  uint16_t l2_len = 0;
  uint16_t l3_len = 0;
  uint16_t l4_len = 0;
  uint16_t tso_segsz = 0;
  // A gathered frame: the segments after the first (bytes capacity.. of the
  // frame, in order). Lent by the PacketIo from alloc_tx_gather until seal();
  // empty for a contiguous frame.
  const TxSeg* segs = nullptr;
  uint16_t nsegs = 0;
  // `data` is a staging area lent by alloc_tx() until seal(): one frame at a time, so such a
  // frame cannot wait while another is built.
  bool staged = false;
  std::span<uint8_t> room() const { return {data, capacity}; }
  std::span<const TxSeg> more() const { return {segs, nsegs}; }
};

// Ethernet's minimum frame less the FCS the port appends (IEEE 802.3 clause 3.2.8: 64
// bytes): a shorter frame is padded with zeros.
inline constexpr uint32_t kMinEthernetFrame = 60;
inline void pad_to_min_frame(TxBuf& b) {
  if (b.len >= kMinEthernetFrame) return;
  std::fill(b.data + b.len, b.data + kMinEthernetFrame, uint8_t{0});
  b.len = kMinEthernetFrame;
}

// What the NIC told us about a received frame (mbuf ol_flags, decoded).
struct RxMeta {
  enum class Cksum : uint8_t { kUnknown, kGood, kBad };
  Cksum ip = Cksum::kUnknown;
  Cksum l4 = Cksum::kUnknown;
  uint16_t port = 0;  // index of the interface the frame arrived on
  uint16_t queue = 0;
  uint32_t rss_hash = 0;
};

// Buffers and transmission for one interface on one core. Implementations batch
// frames and flush them from the outer loop; transmit() never blocks.
class PacketIo {
 public:
  virtual ~PacketIo() = default;
  // A buffer with at least `len` bytes of room, or false when the pool is empty
  // (the caller counts DropReason::kNoMbuf and backs off).
  virtual bool alloc_tx(uint32_t len, TxBuf& out) = 0;
  // A frame of exactly `len` bytes whose first `head` bytes (its headers) are
  // contiguous at out.data; the rest may continue in out.segs, each segment to
  // be filled completely. False when the pool cannot give every buffer the frame
  // needs (nothing is kept: the caller counts DropReason::kNoMbuf). The default
  // hands out one contiguous buffer.
  virtual bool alloc_tx_gather(uint32_t len, uint32_t head, TxBuf& out) {
    (void)head;
    return alloc_tx(len, out);
  }
  // Up to out.size() buffers for frames of `len` bytes, each contiguous in one platform
  // buffer (never staged or gathered), taken in one allocation where the platform has one
  // (a burst of datagrams). Returns how many, at the front of `out`; 0 when the pool is
  // empty or a frame of `len` does not fit one buffer (nothing is kept, nothing counted:
  // the caller falls back to alloc_tx). The default takes them one by one.
  virtual size_t alloc_tx_bulk(uint32_t len, std::span<TxBuf> out) {
    size_t n = 0;
    for (; n < out.size(); ++n) {
      if (!alloc_tx(len, out[n])) break;
      if (out[n].staged || out[n].capacity < len) {
        release(out[n]);
        break;
      }
    }
    return n;
  }
  // Queues a built frame; ownership passes to the implementation. Returns false if
  // the frame was dropped (TX ring full: the implementation counted it).
  virtual bool transmit(TxBuf& buf) = 0;
  // Returns a buffer that will not be sent.
  virtual void release(TxBuf& buf) = 0;
  // The frame is complete but for the Ethernet destination address, and may now be
  // held (behind ARP resolution) before transmit(). An implementation that lent a
  // staging area moves the bytes into its own buffers here and points `data` at
  // them, freeing the staging area for the next frame; one that lent a segment
  // list takes it back (clears `segs`). Idempotent.
  virtual void seal(TxBuf& buf) { (void)buf; }
  virtual TxOffloads tx_offloads() const = 0;
  // Largest frame the port sends, Ethernet header included (MTU + 14 / + 18 with VLAN).
  virtual uint32_t max_frame_len() const = 0;
  // Free buffers left in the pool (for backpressure); a large number when unknown.
  virtual uint32_t free_buffers() const = 0;
};

}  // namespace ws
