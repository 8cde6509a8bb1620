// A transmit side for fuzz targets: one reusable buffer; frames are accepted and dropped.
#pragma once

#include <cstdint>
#include <vector>

#include "stack/core/packet.hpp"

namespace ws::fuzz {

class NullIo final : public PacketIo {
 public:
  bool alloc_tx(uint32_t len, TxBuf& out) override {
    if (len > buf_.size()) return false;
    out = TxBuf{};
    out.data = buf_.data();
    out.capacity = static_cast<uint32_t>(buf_.size());
    return true;
  }
  bool transmit(TxBuf&) override { return true; }
  void release(TxBuf&) override {}
  TxOffloads tx_offloads() const override { return {}; }
  uint32_t max_frame_len() const override { return 9014; }
  uint32_t free_buffers() const override { return 1u << 20; }

 private:
  std::vector<uint8_t> buf_ = std::vector<uint8_t>(65536 + 64);
};

}  // namespace ws::fuzz
