// PacketIo over DPDK mbufs for one (port, tx queue) on one core: allocation from
// the port's pool, frames collected into a burst, flushed by the pipeline loop.
#pragma once

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "dataplane/faults.hpp"
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
         DropCounters& drops)
      : port_(port),
        txq_(txq),
        pool_(pool),
        offloads_(offloads),
        max_frame_(max_frame),
        drops_(drops) {}
  ~MbufIo() override { discard_pending(); }

  bool alloc_tx(uint32_t len, TxBuf& out) override {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    if (m == nullptr) return false;
    uint32_t room = rte_pktmbuf_tailroom(m);
    if (room < len) {
      rte_pktmbuf_free(m);
      return false;
    }
    out = TxBuf{};
    out.data = rte_pktmbuf_mtod(m, uint8_t*);
    out.capacity = room;
    out.handle = m;
    return true;
  }

  bool transmit(TxBuf& b) override {
    auto* m = static_cast<rte_mbuf*>(b.handle);
    if (faults_ != nullptr && faults_->drop_tx()) {
      rte_pktmbuf_free(m);
      b.handle = nullptr;
      return true;  // lost "on the wire": the sender does not know
    }
    m->data_len = static_cast<uint16_t>(b.len);
    m->pkt_len = b.len;
    uint64_t ol = 0;
    if (b.flags != 0) {
      ol |= RTE_MBUF_F_TX_IPV4;
      if (b.flags & kTxIpv4Cksum) ol |= RTE_MBUF_F_TX_IP_CKSUM;
      if (b.flags & kTxUdpCksum) ol |= RTE_MBUF_F_TX_UDP_CKSUM;
      if (b.flags & kTxTcpCksum) ol |= RTE_MBUF_F_TX_TCP_CKSUM;
      if (b.flags & kTxTcpSeg) {
        ol |= RTE_MBUF_F_TX_TCP_SEG;
        m->tso_segsz = b.tso_segsz;
      }
      m->l2_len = b.l2_len;
      m->l3_len = b.l3_len;
      m->l4_len = b.l4_len;
    }
    m->ol_flags = ol;
    if (count_ == kBacklog) {
      drops_.add(DropReason::kTxQueueFull);
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
    rte_pktmbuf_free(static_cast<rte_mbuf*>(b.handle));
    b.handle = nullptr;
  }

  TxOffloads tx_offloads() const override { return offloads_; }
  void set_faults(FaultInjector* f) { faults_ = f; }
  uint32_t max_frame_len() const override { return max_frame_; }
  uint32_t free_buffers() const override {
    uint32_t room = kBacklog - count_;
    return room < free_cached_ ? room : free_cached_;
  }

  // Hands queued frames to the TX ring, in bursts, as far as it takes them;
  // the rest stays queued for the next loop iteration.
  void flush() {
    while (count_ != 0) {
      uint32_t run = std::min<uint32_t>(count_, kBacklog - head_);
      uint16_t want = static_cast<uint16_t>(std::min<uint32_t>(run, 512));
      uint16_t sent = rte_eth_tx_burst(port_, txq_, ring_.data() + head_, want);
      head_ = (head_ + sent) % kBacklog;
      count_ -= sent;
      if (sent < want) break;  // ring full: try again next iteration
    }
    if (count_ == 0) head_ = 0;
  }

  // Refreshed once per loop iteration: counting a mempool walks per-core caches.
  void refresh_free() { free_cached_ = rte_mempool_avail_count(pool_); }
  bool has_pending() const { return count_ != 0; }

 private:
  void discard_pending() {
    while (count_ != 0) {
      rte_pktmbuf_free(ring_[head_]);
      head_ = (head_ + 1) % kBacklog;
      --count_;
    }
  }

  uint16_t port_;
  uint16_t txq_;
  rte_mempool* pool_;
  TxOffloads offloads_;
  uint32_t max_frame_;
  DropCounters& drops_;
  std::array<rte_mbuf*, kBacklog> ring_{};
  uint32_t head_ = 0;
  uint32_t count_ = 0;
  uint32_t free_cached_ = 1u << 30;
  FaultInjector* faults_ = nullptr;
};

}  // namespace ws::dp
