#include "dataplane/faults.hpp"

#include <cstring>

namespace ws::dp {

FaultInjector::FaultInjector(const config::FaultConfig& cfg, uint32_t core)
    : cfg_(cfg), enabled_(cfg.enabled()), state_(cfg.seed * 0x9E3779B97F4A7C15ull + core + 1) {
  ready_.reserve(1024);
}

FaultInjector::~FaultInjector() {
  for (auto& [t, m] : delayed_) rte_pktmbuf_free(m);
  if (held_ != nullptr) rte_pktmbuf_free(held_);
}

// xorshift64*: fast, seeded, reproducible.
uint64_t FaultInjector::next() {
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  return state_ * 0x2545F4914F6CDD1Dull;
}

bool FaultInjector::roll(uint32_t ppm) { return ppm != 0 && next() % 1000000 < ppm; }

void FaultInjector::emit(rte_mbuf* m, Instant now) {
  if (cfg_.delay_us != 0) {
    delayed_.emplace_back(now + Duration::micros(cfg_.delay_us), m);
    ++ctr_.delayed;
  } else {
    ready_.push_back(m);
  }
}

const std::vector<rte_mbuf*>& FaultInjector::filter(rte_mbuf** in, uint16_t n, Instant now) {
  ready_.clear();
  // Delayed frames come out first, in arrival order (the delay is constant).
  while (!delayed_.empty() && delayed_.front().first <= now) {
    ready_.push_back(delayed_.front().second);
    delayed_.pop_front();
  }
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = in[i];
    if (roll(cfg_.loss_ppm)) {
      ++ctr_.lost;
      rte_pktmbuf_free(m);
      continue;
    }
    if (roll(cfg_.corrupt_ppm) && rte_pktmbuf_data_len(m) > 14) {
      uint32_t len = rte_pktmbuf_data_len(m) - 14;
      uint64_t r = next();
      auto* p = rte_pktmbuf_mtod_offset(m, uint8_t*, 14 + (r >> 8) % len);
      *p ^= static_cast<uint8_t>(1u << (r & 7));
      ++ctr_.corrupted;
    }
    rte_mbuf* dup = nullptr;
    if (roll(cfg_.duplicate_ppm)) {
      dup = rte_pktmbuf_alloc(m->pool);
      if (dup != nullptr && rte_pktmbuf_tailroom(dup) >= rte_pktmbuf_data_len(m) &&
          m->nb_segs == 1) {
        std::memcpy(rte_pktmbuf_mtod(dup, void*), rte_pktmbuf_mtod(m, void*),
                    rte_pktmbuf_data_len(m));
        dup->data_len = m->data_len;
        dup->pkt_len = m->pkt_len;
        dup->ol_flags = m->ol_flags;
        ++ctr_.duplicated;
      } else if (dup != nullptr) {
        rte_pktmbuf_free(dup);
        dup = nullptr;
      }
    }
    if (held_ == nullptr && roll(cfg_.reorder_ppm)) {
      held_ = m;  // goes out after the next frame
      held_since_ = now;
      ++ctr_.reordered;
    } else {
      emit(m, now);
      if (held_ != nullptr) {
        emit(held_, now);
        held_ = nullptr;
      }
    }
    if (dup != nullptr) emit(dup, now);
  }
  // A held frame with nothing behind it for a millisecond goes out anyway.
  if (held_ != nullptr && now - held_since_ >= Duration::millis(1)) {
    emit(held_, now);
    held_ = nullptr;
  }
  return ready_;
}

}  // namespace ws::dp
