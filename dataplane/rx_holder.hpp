// The stack's RxHolder on mbufs (stack/tcp/rx_held.hpp): TCP keeps unread received
// bytes in the mbufs they arrived in by taking a reference on every segment of the
// frame, and gives it back with rte_pktmbuf_free once the application has read them
// (the pipeline frees its own reference right after Stack::receive, as always).
//
// Held mbufs must never starve the port of receive buffers: the ACKs that let
// applications drain their sends arrive in them. So each pool gets a budget, a
// quarter of its mbufs, that holds never exceed (checked exactly, per retain), and
// when the pool's free count falls below an eighth anyway (other users), the
// pipeline refuses new holds and asks TCP to copy what it holds into its rings.
#pragma once

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <array>
#include <cstdint>

#include "stack/core/packet_view.hpp"

namespace ws::dp {

class MbufHolder final : public RxHolder {
 public:
  // Registers a pool whose mbufs may be held (one per port on this core).
  void add_pool(const rte_mempool* pool) {
    for (size_t i = 0; i < n_; ++i) {
      if (pools_[i].pool == pool) return;
    }
    if (n_ == pools_.size()) return;  // more ports than slots: not held, copied
    pools_[n_++] = Pool{pool, 0, pool->size / 4};
  }

  bool retain(const void* frame) override {
    auto* m = static_cast<rte_mbuf*>(const_cast<void*>(frame));
    Pool* p = find(m->pool);
    if (p == nullptr || low_ || p->held + m->nb_segs > p->budget) {
      ++refused_;
      return false;
    }
    for (rte_mbuf* s = m; s != nullptr; s = s->next) rte_mbuf_refcnt_update(s, 1);
    p->held += m->nb_segs;
    return true;
  }

  void release(const void* frame) override {
    auto* m = static_cast<rte_mbuf*>(const_cast<void*>(frame));
    Pool* p = find(m->pool);
    if (p != nullptr) p->held -= m->nb_segs;
    rte_pktmbuf_free(m);
  }

  // Refuse new holds while a pool runs low (set by the pipeline from its periodic
  // free counts).
  void set_low(bool low) { low_ = low; }
  uint64_t held_mbufs() const {
    uint64_t n = 0;
    for (size_t i = 0; i < n_; ++i) n += pools_[i].held;
    return n;
  }
  uint64_t refused() const { return refused_; }

 private:
  struct Pool {
    const rte_mempool* pool = nullptr;
    uint32_t held = 0;    // mbufs (segments) held now
    uint32_t budget = 0;  // at most this many
  };
  Pool* find(const rte_mempool* pool) {
    for (size_t i = 0; i < n_; ++i) {
      if (pools_[i].pool == pool) return &pools_[i];
    }
    return nullptr;
  }
  std::array<Pool, 8> pools_{};
  size_t n_ = 0;
  bool low_ = false;
  uint64_t refused_ = 0;
};

}  // namespace ws::dp
