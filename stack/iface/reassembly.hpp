// IPv4 fragment reassembly for one core (RFC 791 section 3.2, RFC 815, RFC 1122
// section 3.3.2). A bounded table of datagrams in progress keyed by (source,
// destination, protocol, identification); fragment payloads are copied into a
// per-slot buffer, so the received frame can be freed at once. When the table is
// full, a new datagram evicts the one that started first: a flood of fragments that
// never complete (random identifications) then costs legitimate datagrams, which
// complete within a round trip, nothing but the bounded table. Overlaps are
// treated strictly, in the spirit of RFC 5722: an exact duplicate is ignored,
// any other overlap discards the whole datagram. No DPDK, no clock: time is a
// parameter and poll() returns the next deadline.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "stack/core/addr.hpp"
#include "stack/core/drops.hpp"
#include "stack/core/time.hpp"

namespace ws {

struct ReassemblyConfig {
  uint32_t max_entries = 64;      // datagrams in progress at once
  uint32_t max_fragments = 64;    // distinct fragments per datagram
  uint32_t max_datagram = 65535;  // reassembled size, IPv4 header included
  // RFC 1122 3.3.2: the reassembly timeout is recommended between 15 and 60 s.
  Duration timeout = Duration::seconds(30);
};

struct ReassemblyStats {
  uint64_t fragments_in = 0;    // fragments offered to input()
  uint64_t reassembled = 0;     // datagrams completed
  uint64_t duplicates = 0;      // exact duplicates ignored
  uint64_t timed_out = 0;       // datagrams expired incomplete
  uint64_t evicted = 0;         // datagrams in progress evicted by a new one (table full)
  uint64_t entries_in_use = 0;  // gauge: datagrams in progress (or discarded, until expiry)
  uint64_t held_bytes = 0;      // gauge: payload bytes held for datagrams in progress
  uint64_t buffer_bytes = 0;    // gauge: buffer memory allocated (kept for reuse)
};

class Reassembler {
 public:
  explicit Reassembler(ReassemblyConfig cfg = {});
  Reassembler(const Reassembler&) = delete;
  Reassembler& operator=(const Reassembler&) = delete;

  // One fragment: `ip_packet` is a validated IPv4 packet (header checked, bounded
  // by its total length) whose MF flag or offset is set. Returns the reassembled
  // datagram (the first fragment's header, with total length, flags, offset and
  // checksum rewritten, followed by the whole payload) when this fragment
  // completes it; the span stays valid until the next call to input(). Every
  // fragment discarded is counted in `drops` under its reason.
  std::optional<std::span<const uint8_t>> input(std::span<const uint8_t> ip_packet, Instant now,
                                                DropCounters& drops);

  // Called for each datagram that expires with its first fragment present (for
  // ICMP time exceeded, RFC 792): the first fragment's header and at least the
  // first 8 bytes of its data when they arrived.
  using ExpiredFn = std::function<void(std::span<const uint8_t> first_fragment)>;

  // Frees expired datagrams (counting their fragments as ipv4_reassembly_timeout)
  // and returns the next deadline (never when the table is empty).
  Instant poll(Instant now, DropCounters& drops, const ExpiredFn& on_expired = {});
  Instant next_deadline() const { return next_deadline_; }

  size_t entries() const;
  const ReassemblyStats& stats() const { return stats_; }
  const ReassemblyConfig& config() const { return cfg_; }
  // Bytes of payload buffer the table holds (grows to max_entries * max_datagram at most).
  size_t buffer_bytes() const { return stats_.buffer_bytes; }

 private:
  // Room before the payload in a slot's buffer for the largest IPv4 header.
  static constexpr size_t kHeadroom = 60;

  struct Frag {
    uint32_t off;  // payload offset, bytes
    uint32_t len;  // payload bytes
  };
  enum class State : uint8_t { kFree, kActive, kDiscarded };
  struct Slot {
    State state = State::kFree;
    Ipv4Addr src;
    Ipv4Addr dst;
    uint8_t proto = 0;
    uint16_t id = 0;
    Instant expires;
    DropReason discard_reason = DropReason::kIpv4Fragment;
    uint32_t total = 0;  // payload length once the last fragment arrived; 0 = unknown
    bool have_last = false;
    uint16_t header_len = 0;         // of the first fragment's header; 0 = not yet arrived
    uint32_t received = 0;           // payload bytes held (fragments never overlap)
    std::vector<Frag> frags;         // sorted by offset
    std::unique_ptr<uint8_t[]> buf;  // kHeadroom + max payload, allocated on first use
  };

  Slot* find(Ipv4Addr src, Ipv4Addr dst, uint8_t proto, uint16_t id);
  // A free slot, or the one whose datagram started first, evicted (counted under
  // ipv4_reassembly_evicted with its fragments).
  Slot* allocate(DropCounters& drops);
  // Discards a datagram in progress: its fragments and the one that arrived are
  // counted under `reason`; further fragments of it are discarded until it expires.
  void discard(Slot& s, DropReason reason, DropCounters& drops);
  void release(Slot& s);
  void recompute_deadline();
  // The steps of input(): a slot for a new datagram, one fragment placed in it (false
  // when it is not kept), and the datagram once every byte is there.
  Slot* open(Ipv4Addr src, Ipv4Addr dst, uint8_t proto, uint16_t id, Instant now,
             DropCounters& drops);
  bool place(Slot& s, uint32_t off, std::span<const uint8_t> payload, bool more,
             DropCounters& drops);
  std::optional<std::span<const uint8_t>> complete(Slot& s, DropCounters& drops);

  ReassemblyConfig cfg_;
  std::vector<Slot> slots_;
  ReassemblyStats stats_;
  Instant next_deadline_ = Instant::never();
};

}  // namespace ws
