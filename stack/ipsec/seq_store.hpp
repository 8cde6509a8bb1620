// Durable reservation of outbound sequence numbers under ipsec.state_dir. Before an SA sends
// from a block of numbers, the start of the block after it is written and fsynced; after a
// restart the SA continues from the recorded number, above every number that could have been
// used. A record that cannot be read or parsed stops the SA rather than restart it at 1.
// File I/O happens at start and once per block, never per packet.
#pragma once

#include <cstdint>
#include <string>

#include "stack/core/addr.hpp"
#include "stack/ipsec/sequence.hpp"

namespace ws::ipsec {

// What a record belongs to: an outbound SA is named on the wire by its SPI and peer.
struct SeqRecordId {
  uint32_t spi = 0;
  ws::Ipv4Addr remote;
};

class SeqStore {
 public:
  static constexpr uint64_t kDefaultBlock = uint64_t{1} << 20;

  explicit SeqStore(std::string dir, uint64_t block = kDefaultBlock)
      : dir_(std::move(dir)), block_(block) {}

  // Reads the SA's record (none: start at 1) and reserves the first block.
  bool start(const SeqRecordId& id, OutboundSequence& seq, std::string& error) const;
  // When `seq` wants more, reserves the next block. False (and `error`) when it cannot.
  bool refill(const SeqRecordId& id, OutboundSequence& seq, std::string& error) const;

  // The record's path: DIR/out-SPI-REMOTE.seq.
  std::string path(const SeqRecordId& id) const;
  uint64_t block() const { return block_; }

 private:
  // Records block_start + block (or the limit) as the next run's start, then grants
  // [next, that).
  bool reserve(const SeqRecordId& id, OutboundSequence& seq, uint64_t next, uint64_t block_start,
               std::string& error) const;

  std::string dir_;
  uint64_t block_;
};

}  // namespace ws::ipsec
