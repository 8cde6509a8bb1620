// The capture segment: a shared-memory file that the data plane creates at start and
// `wirespeed-control capture` maps to take copies of frames while traffic runs.
//
// Why a segment of our own rather than DPDK's pdump: pdump needs the reader to be a
// DPDK secondary process, which cannot attach to a primary started with --no-huge, and it
// sees frames only at the ethdev callbacks, so it cannot say why the stack discarded one.
// Here each core copies the frames a request asks for into a single-producer,
// single-consumer byte ring of its own; the reader drains the rings and writes pcapng.
// A core never waits for the reader: when its ring is full the copy is dropped and counted.
//
// No DPDK in this header: both binaries include it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ws::capture {

inline constexpr uint64_t kMagic = 0x5753434150543031ull;  // "WSCAPT01"
inline constexpr uint32_t kVersion = 1;
inline constexpr uint32_t kMaxCores = 128;
inline constexpr uint32_t kMaxPorts = 32;
inline constexpr uint32_t kNameMax = 32;
// A core's ring: large enough to absorb a reader's scheduling hiccup at tens of Gbit/s of
// copies (4 MiB is about 2,800 full 1500-byte frames).
inline constexpr uint64_t kDefaultRingBytes = 4ull << 20;
inline constexpr uint32_t kAnyPort = 0xffffffffu;
inline constexpr uint32_t kAnyQueue = 0xffffffffu;
inline constexpr uint16_t kNoReason = 0xffff;

// What a request asks for (bits of Request::what).
enum What : uint32_t {
  kRx = 1u << 0,     // frames received on the port
  kTx = 1u << 1,     // frames handed to the port for transmission
  kDrops = 1u << 2,  // frames the stack or the TX path discarded, with the reason
};

enum class Direction : uint8_t { kRx = 0, kTx = 1, kPad = 0xff };

// Written by the reader while `armed` is 0, then published by setting `armed` (release);
// the cores read it only after seeing `armed` set (acquire).
struct Request {
  uint32_t what = 0;
  uint32_t port = kAnyPort;    // index into Header::ports, or kAnyPort
  uint32_t queue = kAnyQueue;  // queue number, or kAnyQueue
  uint32_t snaplen = 0;        // bytes kept of each frame
};

struct PortEntry {
  char name[kNameMax];
  uint32_t mtu;
  uint16_t rx_queues;
  uint16_t tx_queues;
};

struct alignas(64) Header {
  uint64_t magic;
  uint32_t version;
  uint32_t cores;
  uint64_t ring_bytes;   // data bytes per core ring (a power of two)
  uint64_t ring_offset;  // file offset of core 0's ring
  uint64_t ring_stride;  // bytes from one core's ring to the next
  int64_t dataplane_pid;
  uint32_t ports_count;
  uint32_t reserved;
  PortEntry ports[kMaxPorts];
  alignas(64) std::atomic<uint32_t> armed;
  Request request;
  // The reader bumps this while it runs; the data plane disarms a request whose reader
  // stopped beating (it was killed), so copies do not go on for nobody.
  alignas(64) std::atomic<uint64_t> reader_beat;
};

struct alignas(64) RingHeader {
  alignas(64) std::atomic<uint64_t> head;  // bytes produced (the core)
  std::atomic<uint64_t> copied;            // frames copied into the ring
  std::atomic<uint64_t> dropped;           // copies dropped: the ring was full
  alignas(64) std::atomic<uint64_t> tail;  // bytes consumed (the reader)
};

// One frame in a ring, followed by `caplen` bytes, the whole padded to 8 bytes. A record
// of Direction::kPad fills the ring's end when the next record would not fit there.
struct Record {
  uint32_t size;     // this record's bytes in the ring, header and padding included
  uint32_t wirelen;  // the frame's length on the wire
  uint32_t caplen;   // bytes that follow
  uint16_t port;
  uint16_t queue;
  uint64_t time_ns;  // wall clock (CLOCK_REALTIME), nanoseconds
  Direction dir;
  uint8_t pad0;
  uint16_t reason;  // kNoReason, or a ws::DropReason for a dropped frame
  uint32_t pad1;
};
static_assert(sizeof(Record) == 32);

inline constexpr uint64_t record_size(uint32_t caplen) {
  return (sizeof(Record) + caplen + 7) & ~uint64_t{7};
}

inline uint64_t ring_stride(uint64_t ring_bytes) { return sizeof(RingHeader) + ring_bytes; }

inline uint64_t segment_size(uint32_t cores, uint64_t ring_bytes) {
  uint64_t header = (sizeof(Header) + 4095) & ~uint64_t{4095};
  return header + cores * ring_stride(ring_bytes);
}

inline uint64_t rings_offset() { return (sizeof(Header) + 4095) & ~uint64_t{4095}; }

}  // namespace ws::capture
