// PacketIo over DPDK mbufs for one (port, tx queue) on one core: allocation from
// the port's pool, frames collected into a burst, flushed by the pipeline loop.
#pragma once

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>

#include "dataplane/capture.hpp"
#include "dataplane/faults.hpp"
#include "stack/core/counters.hpp"
#include "stack/core/drops.hpp"
#include "stack/core/packet.hpp"

namespace ws::dp {

class MbufIo final : public PacketIo {
 public:
  static constexpr uint16_t kBurst = 32;
  // Frames waiting for room in the TX ring. While it fills, free_buffers()
  // reports less room, so TCP holds data back (backpressure) instead of having
  // its segments dropped at a full ring and retransmitting them.
  static constexpr uint32_t kBacklog = 4096;

  MbufIo(uint16_t port, uint16_t txq, rte_mempool* pool, TxOffloads offloads, uint32_t max_frame,
         DropCounters& drops, StackCounters& counters)
      : port_(port),
        txq_(txq),
        pool_(pool),
        offloads_(offloads),
        max_frame_(max_frame),
        drops_(drops),
        counters_(counters) {}
  ~MbufIo() override { discard_pending(); }

  // Takes the first mbuf of a frame. A frame that fits in it is ready in `out`
  // (and `m` is left null); otherwise `m` and its `room` are for the caller to chain.
  bool alloc_head(uint32_t len, TxBuf& out, rte_mbuf*& m, uint32_t& room) {
    rte_mbuf* first = rte_pktmbuf_alloc(pool_);
    if (first == nullptr) return false;
    room = rte_pktmbuf_tailroom(first);
    out = TxBuf{};
    if (room >= len) {
      out.data = rte_pktmbuf_mtod(first, uint8_t*);
      out.capacity = room;
      out.handle = first;
      return true;
    }
    m = first;
    return true;
  }

  bool alloc_tx(uint32_t len, TxBuf& out) override {
    rte_mbuf* m = nullptr;
    uint32_t room = 0;
    if (!alloc_head(len, out, m, room)) return false;
    if (m == nullptr) return true;  // the frame fits in one mbuf
    // Larger than one mbuf: a chain, built in the staging area and moved into
    // the chain by seal(). One frame is staged at a time: the stack builds and
    // commits frames one after another.
    if (!chains_ || staged_ != nullptr || len > staging_.size()) {
      rte_pktmbuf_free(m);
      return false;
    }
    if (!extend_chain(m, len, room)) {
      rte_pktmbuf_free(m);
      return false;
    }
    staged_ = m;
    out.data = staging_.data();
    out.staged = true;
    out.capacity = len;
    out.handle = m;
    return true;
  }

  // A burst of one-mbuf frames in one rte_pktmbuf_alloc_bulk (all or nothing: on a pool
  // that cannot give them all, as many as single allocations get).
  size_t alloc_tx_bulk(uint32_t len, std::span<TxBuf> out) override {
    std::array<rte_mbuf*, kMaxBulk> ms{};
    const auto want = static_cast<unsigned>(std::min<size_t>(out.size(), kMaxBulk));
    unsigned n = want;
    if (want == 0 || rte_pktmbuf_alloc_bulk(pool_, ms.data(), want) != 0) {
      for (n = 0; n < want && (ms[n] = rte_pktmbuf_alloc(pool_)) != nullptr; ++n) {
      }
    }
    if (n != 0 && rte_pktmbuf_tailroom(ms[0]) < len) {  // one pool: all alike
      rte_pktmbuf_free_bulk(ms.data(), n);
      return 0;
    }
    for (unsigned i = 0; i < n; ++i) {
      out[i] = TxBuf{};
      out[i].data = rte_pktmbuf_mtod(ms[i], uint8_t*);
      out[i].capacity = rte_pktmbuf_tailroom(ms[i]);
      out[i].handle = ms[i];
    }
    return n;
  }

  // A chain whose segments the stack fills itself: headers in the first mbuf,
  // the payload straight into the others (no staging copy). Every mbuf is taken
  // in one bulk allocation, so a pool that runs dry mid-chain gives back what it
  // gave and the frame is refused whole. One segment list is lent at a time,
  // from here to seal(): the stack builds and commits frames one after another.
  bool alloc_tx_gather(uint32_t len, uint32_t head, TxBuf& out) override {
    rte_mbuf* m = nullptr;
    uint32_t room = 0;
    if (!alloc_head(len, out, m, room)) return false;
    if (m == nullptr) return true;  // the frame fits in one mbuf
    if (!chains_ || lent_ != nullptr || head > room || !extend_chain(m, len, room)) {
      rte_pktmbuf_free(m);
      return false;
    }
    // Every segment is sized now (the last one to the frame's tail): the stack
    // writes exactly `len` bytes.
    uint32_t left = len;
    uint16_t n = 0;
    for (rte_mbuf* s = m; s != nullptr; s = s->next) {
      uint32_t take = std::min<uint32_t>(left, rte_pktmbuf_tailroom(s));
      s->data_len = static_cast<uint16_t>(take);
      left -= take;
      if (s != m) segs_[n++] = TxSeg{rte_pktmbuf_mtod(s, uint8_t*), take};
    }
    m->pkt_len = len;
    lent_ = m;
    out.data = rte_pktmbuf_mtod(m, uint8_t*);
    out.capacity = m->data_len;
    out.handle = m;
    out.segs = segs_.data();
    out.nsegs = n;
    return true;
  }

  void seal(TxBuf& b) override {
    auto* m = static_cast<rte_mbuf*>(b.handle);
    if (m != nullptr && m == lent_) {
      lent_ = nullptr;
      b.segs = nullptr;
      b.nsegs = 0;
      ++counters_.tx_chained_frames;
      return;
    }
    if (m == nullptr || m != staged_) return;
    fill_chain(m, b.data, b.len);
    staged_ = nullptr;
    b.data = rte_pktmbuf_mtod(m, uint8_t*);
    b.capacity = m->data_len;
    ++counters_.tx_chained_frames;
    ++counters_.tx_staged_frames;
  }

  bool transmit(TxBuf& b) override {
    seal(b);
    auto* m = static_cast<rte_mbuf*>(b.handle);
    if (faults_ != nullptr && faults_->drop_tx()) {
      rte_pktmbuf_free(m);
      b.handle = nullptr;
      return true;  // lost "on the wire": the sender does not know
    }
    if (m->nb_segs == 1) {
      m->data_len = static_cast<uint16_t>(b.len);
      m->pkt_len = b.len;
    }
    uint64_t ol = 0;
    if (b.flags != 0) {
      ol |= RTE_MBUF_F_TX_IPV4;
      if (b.flags & kTxIpv4Cksum) ol |= RTE_MBUF_F_TX_IP_CKSUM;
      if (b.flags & kTxUdpCksum) ol |= RTE_MBUF_F_TX_UDP_CKSUM;
      if (b.flags & kTxTcpCksum) ol |= RTE_MBUF_F_TX_TCP_CKSUM;
      if (b.flags & kTxTcpSeg) {
        ol |= RTE_MBUF_F_TX_TCP_SEG;
        m->tso_segsz = b.tso_segsz;
        ++counters_.tx_tso_frames;
      }
      m->l2_len = b.l2_len;
      m->l3_len = b.l3_len;
      m->l4_len = b.l4_len;
    }
    m->ol_flags = ol;
    if (count_ == kBacklog) {
      drops_.add(DropReason::kTxQueueFull);
      if (tap_->armed())
        tap_->drop(m, iface_, txq_, capture::Direction::kTx, DropReason::kTxQueueFull);
      rte_pktmbuf_free(m);
      b.handle = nullptr;
      return false;
    }
    ring_[(head_ + count_++) % kBacklog] = m;
    b.handle = nullptr;
    if (count_ >= kBurst) flush();
    return true;
  }

  void release(TxBuf& b) override {
    auto* m = static_cast<rte_mbuf*>(b.handle);
    if (m != nullptr && m == staged_) staged_ = nullptr;
    if (m != nullptr && m == lent_) lent_ = nullptr;
    rte_pktmbuf_free(m);
    b.handle = nullptr;
  }

  // Lets frames larger than one mbuf go out as chains (the port takes
  // RTE_ETH_TX_OFFLOAD_MULTI_SEGS).
  void enable_chains() { chains_ = true; }

  TxOffloads tx_offloads() const override { return offloads_; }
  void set_faults(FaultInjector* f) { faults_ = f; }
  // Copies of what this queue sends go to `tap` while a capture asks for them; `iface` is
  // the port's index in the capture's port list.
  void set_tap(CaptureTap* tap, uint16_t iface) {
    tap_ = tap;
    iface_ = iface;
  }
  uint32_t max_frame_len() const override { return max_frame_; }
  uint32_t free_buffers() const override {
    uint32_t room = kBacklog - count_;
    return room < free_cached_ ? room : free_cached_;
  }

  // Hands queued frames to the TX ring, in bursts, as far as it takes them;
  // the rest stays queued for the next loop iteration.
  // Returns how many frames the TX ring took.
  uint32_t flush() {
    if (tap_->armed()) [[unlikely]]
      tap_queued();
    uint32_t before = count_;
    while (count_ != 0) {
      uint32_t run = std::min<uint32_t>(count_, kBacklog - head_);
      uint16_t want = static_cast<uint16_t>(std::min<uint32_t>(run, 512));
      uint16_t sent = rte_eth_tx_burst(port_, txq_, ring_.data() + head_, want);
      head_ = (head_ + sent) % kBacklog;
      count_ -= sent;
      if (sent < want) break;  // ring full: try again next iteration
    }
    uint32_t sent = before - count_;
    tapped_ = tapped_ > sent ? tapped_ - sent : 0;
    if (count_ == 0) head_ = 0;
    return sent;
  }

  // Refreshed once per loop iteration: counting a mempool walks per-core caches.
  void refresh_free() { free_cached_ = rte_mempool_avail_count(pool_); }
  const rte_mempool* pool() const { return pool_; }
  // The pool is below an eighth of its mbufs free (as of the last refresh_free).
  bool pool_low() const { return free_cached_ < pool_->size / 8; }
  bool has_pending() const { return count_ != 0; }

 private:
  // Copies the queued frames not copied yet (the first `tapped_` were, in an earlier
  // flush that the TX ring did not take whole).
  void tap_queued() {
    for (uint32_t i = tapped_; i < count_; ++i)
      tap_->tx(ring_[(head_ + i) % kBacklog], iface_, txq_);
    tapped_ = count_;
  }

  // Appends mbufs to `head` until the chain holds `len` bytes (`room` per mbuf).
  // All or nothing: the bulk allocation takes every mbuf or none.
  bool extend_chain(rte_mbuf* head, uint32_t len, uint32_t room) {
    uint32_t extra = (len - room + room - 1) / room;
    if (extra + 1 > kMaxSegs) return false;
    std::array<rte_mbuf*, kMaxSegs> segs{};
    if (rte_pktmbuf_alloc_bulk(pool_, segs.data(), extra) != 0) return false;
    rte_mbuf* tail = head;
    for (uint32_t i = 0; i < extra; ++i) {
      tail->next = segs[i];
      tail = segs[i];
    }
    head->nb_segs = static_cast<uint16_t>(extra + 1);
    return true;
  }

  // Copies `len` staged bytes into the chain at `head`, segment by segment, and
  // sets the lengths; segments the frame does not reach are freed.
  static void fill_chain(rte_mbuf* head, const uint8_t* src, uint32_t len) {
    uint32_t left = len;
    uint16_t used = 0;
    rte_mbuf* prev = nullptr;
    for (rte_mbuf* s = head; s != nullptr; s = s->next) {
      if (left == 0 && prev != nullptr) {
        prev->next = nullptr;
        rte_pktmbuf_free(s);
        break;
      }
      uint32_t n = std::min<uint32_t>(left, rte_pktmbuf_tailroom(s) + s->data_len);
      std::memcpy(rte_pktmbuf_mtod(s, uint8_t*), src, n);
      s->data_len = static_cast<uint16_t>(n);
      src += n;
      left -= n;
      ++used;
      prev = s;
    }
    head->nb_segs = used;
    head->pkt_len = len;
  }

  void discard_pending() {
    while (count_ != 0) {
      rte_pktmbuf_free(ring_[head_]);
      head_ = (head_ + 1) % kBacklog;
      --count_;
    }
  }

  static constexpr size_t kMaxBulk = 64;
  // A TSO super-segment (64 KiB) over 2 KiB mbufs needs 33.
  static constexpr uint32_t kMaxSegs = 64;

  uint16_t port_;
  uint16_t txq_;
  rte_mempool* pool_;
  TxOffloads offloads_;
  uint32_t max_frame_;
  DropCounters& drops_;
  StackCounters& counters_;
  std::array<rte_mbuf*, kBacklog> ring_{};
  uint32_t head_ = 0;
  uint32_t count_ = 0;
  uint32_t free_cached_ = 1u << 30;
  FaultInjector* faults_ = nullptr;
  CaptureTap* tap_ = CaptureTap::none();
  uint16_t iface_ = 0;
  uint32_t tapped_ = 0;  // queued frames, from head_, already copied to a capture
  bool chains_ = false;
  rte_mbuf* staged_ = nullptr;  // the chain whose bytes sit in staging_
  rte_mbuf* lent_ = nullptr;    // the gathered chain whose segment list segs_ holds
  std::array<TxSeg, kMaxSegs> segs_{};
  // Largest staged frame: an IPv4 packet of 65535 bytes behind an Ethernet header.
  std::array<uint8_t, 65535 + 14> staging_{};
};

}  // namespace ws::dp
