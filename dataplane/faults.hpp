// Seeded fault injection on received frames (dataplane.faults): loss,
// duplication, one-bit corruption, reordering and constant delay, decided per
// frame by a deterministic generator. A testing aid for kernels without netem;
// off (and free) unless configured.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <deque>
#include <vector>

#include "control/config/config.hpp"
#include "stack/core/time.hpp"

namespace ws::dp {

struct FaultCounters {
  uint64_t lost = 0, duplicated = 0, corrupted = 0, reordered = 0, delayed = 0, tx_lost = 0;
};

class FaultInjector {
 public:
  FaultInjector(const config::FaultConfig& cfg, uint32_t core);
  ~FaultInjector();
  bool enabled() const { return enabled_; }

  // Takes a received burst; returns the frames to process now (valid until the
  // next call). Frames held back are released on later calls, in order.
  const std::vector<rte_mbuf*>& filter(rte_mbuf** in, uint16_t n, Instant now);
  // Something is held: the loop must call filter() again even with no new frames.
  bool holding() const { return !delayed_.empty() || held_ != nullptr; }
  const FaultCounters& counters() const { return ctr_; }
  // Transmit side: true when a frame about to be sent is to be dropped.
  bool drop_tx() {
    if (!roll(cfg_.tx_loss_ppm)) return false;
    ++ctr_.tx_lost;
    return true;
  }

 private:
  bool roll(uint32_t ppm);
  uint64_t next();
  void emit(rte_mbuf* m, Instant now);

  config::FaultConfig cfg_;
  bool enabled_;
  uint64_t state_;
  std::vector<rte_mbuf*> ready_;
  std::deque<std::pair<Instant, rte_mbuf*>> delayed_;
  rte_mbuf* held_ = nullptr;  // reordered: released after the next frame
  Instant held_since_;
  FaultCounters ctr_;
};

}  // namespace ws::dp
