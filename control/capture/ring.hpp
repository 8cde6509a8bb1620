// The two ends of a core's capture ring (layout.hpp): one producer (the core), one
// consumer (the capture reader). Positions are byte counts that only grow; the ring is a
// power of two, so a position's offset is `pos & (bytes - 1)`. A record never wraps: when
// the next one would not fit before the end, the producer skips to the start, marking the
// skipped bytes with a pad record when there is room for its header.
#pragma once

#include <cstdint>
#include <cstring>

#include "control/capture/layout.hpp"

namespace ws::capture {

class RingWriter {
 public:
  RingWriter() = default;
  RingWriter(RingHeader* header, uint8_t* data, uint64_t bytes)
      : h_(header), data_(data), bytes_(bytes), head_(header->head.load()) {}

  // Room for a record with `caplen` bytes of frame; the caller fills `rec` and the bytes
  // at the returned pointer, then calls commit(). Null when the ring is full: the copy is
  // dropped and counted, the core never waits for the reader.
  uint8_t* reserve(uint32_t caplen, Record*& rec) {
    uint64_t need = record_size(caplen);
    uint64_t pos = head_ & (bytes_ - 1);
    uint64_t to_end = bytes_ - pos;
    uint64_t skip = to_end < need ? to_end : 0;
    if (head_ + skip + need - tail_ > bytes_) {
      tail_ = h_->tail.load(std::memory_order_acquire);
      if (head_ + skip + need - tail_ > bytes_) {
        h_->dropped.store(h_->dropped.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
        return nullptr;
      }
    }
    if (skip != 0) {
      if (skip >= sizeof(Record)) {
        Record pad{};
        pad.size = static_cast<uint32_t>(skip);
        pad.dir = Direction::kPad;
        std::memcpy(data_ + pos, &pad, sizeof pad);
      }
      head_ += skip;
      pos = 0;
    }
    rec = reinterpret_cast<Record*>(data_ + pos);
    rec->size = static_cast<uint32_t>(need);
    rec->caplen = caplen;
    pending_ = need;
    return data_ + pos + sizeof(Record);
  }

  // Publishes the record reserved last.
  void commit() {
    head_ += pending_;
    pending_ = 0;
    h_->head.store(head_, std::memory_order_release);
    h_->copied.store(h_->copied.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  bool valid() const { return h_ != nullptr; }

 private:
  RingHeader* h_ = nullptr;
  uint8_t* data_ = nullptr;
  uint64_t bytes_ = 0;
  uint64_t head_ = 0;
  uint64_t tail_ = 0;  // the reader's position as last seen: re-read only when short of room
  uint64_t pending_ = 0;
};

class RingReader {
 public:
  RingReader(RingHeader* header, const uint8_t* data, uint64_t bytes)
      : h_(header), data_(data), bytes_(bytes), tail_(header->tail.load()) {}

  // The next record, or null when the ring is empty. The record stays valid until
  // release().
  const Record* peek() {
    uint64_t head = h_->head.load(std::memory_order_acquire);
    while (tail_ != head) {
      uint64_t pos = tail_ & (bytes_ - 1);
      uint64_t to_end = bytes_ - pos;
      if (to_end < sizeof(Record)) {
        tail_ += to_end;  // too short for a pad record: the producer skipped it
        continue;
      }
      const auto* rec = reinterpret_cast<const Record*>(data_ + pos);
      if (rec->dir == Direction::kPad) {
        tail_ += rec->size;
        continue;
      }
      return rec;
    }
    h_->tail.store(tail_, std::memory_order_release);
    return nullptr;
  }

  static const uint8_t* bytes_of(const Record* rec) {
    return reinterpret_cast<const uint8_t*>(rec) + sizeof(Record);
  }

  void release(const Record* rec) {
    tail_ += rec->size;
    h_->tail.store(tail_, std::memory_order_release);
  }

  // Skips everything produced so far (records of an earlier request).
  void discard() {
    tail_ = h_->head.load(std::memory_order_acquire);
    h_->tail.store(tail_, std::memory_order_release);
  }

 private:
  RingHeader* h_;
  const uint8_t* data_;
  uint64_t bytes_;
  uint64_t tail_;
};

}  // namespace ws::capture
