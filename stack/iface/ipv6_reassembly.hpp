// IPv6 fragment reassembly for one core (RFC 8200 section 4.5), built as the IPv4
// reassembler is (reassembly.hpp): a bounded table of packets in progress keyed by
// (source, destination, identification), fragment payloads copied into a per-slot
// buffer, overlaps refused (RFC 5722: the whole packet is discarded, and so are its
// later fragments; exact duplicates are ignored as RFC 8200 allows). Time is a parameter.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "stack/core/addr.hpp"
#include "stack/core/drops.hpp"
#include "stack/core/packet_view.hpp"
#include "stack/core/time.hpp"
#include "stack/wire/ipv6.hpp"

namespace ws {

struct Ipv6ReassemblyConfig {
  uint32_t max_entries = 64;    // packets in progress at once
  uint32_t max_fragments = 64;  // distinct fragments per packet
  // RFC 8200 4.5: abandoned 60 s after the first fragment arrived.
  Duration timeout = Duration::seconds(60);
};

class Ipv6Reassembler {
 public:
  explicit Ipv6Reassembler(Ipv6ReassemblyConfig cfg = {});
  Ipv6Reassembler(const Ipv6Reassembler&) = delete;
  Ipv6Reassembler& operator=(const Ipv6Reassembler&) = delete;

  // One fragment: `pkt` is an IPv6 packet (fixed header checked, bounded by its payload
  // length) whose header chain ended at the non-atomic Fragment header `f`. Returns the
  // reassembled packet when this fragment completes it: the first fragment's
  // unfragmentable part (Payload Length and the Next Header that named the Fragment
  // header rewritten) followed by the whole fragmentable part. The span stays valid
  // until the next call. Fragments discarded are counted in `drops`.
  std::optional<std::span<const uint8_t>> input(const PacketView& pkt,
                                                const wire::Ipv6FragmentInfo& f, Instant now,
                                                DropCounters& drops);
  // Called for each packet that expires with its first fragment (RFC 8200 4.5, for ICMPv6
  // time exceeded): the rebuilt unfragmentable part (Payload Length set to what follows)
  // and the first fragment's data; writable, valid for the call.
  using ExpiredFn = std::function<void(std::span<uint8_t> first_fragment)>;
  // Frees expired packets (their fragments counted as ipv6_reassembly_timeout); returns
  // the next deadline.
  Instant poll(Instant now, DropCounters& drops, const ExpiredFn& on_expired = {});
  Instant next_deadline() const { return next_deadline_; }
  size_t entries() const;
  uint64_t reassembled() const { return reassembled_; }

 private:
  // The longest unfragmentable part we take: the fixed header and a chain within the
  // walk's bound.
  static constexpr size_t kHeadroom = wire::Ipv6View::kHeaderLen + wire::kIpv6MaxChainBytes;
  static constexpr uint32_t kMaxPayload = 65535;

  struct Frag {
    uint32_t off;
    uint32_t len;
  };
  enum class State : uint8_t { kFree, kActive, kDiscarded };
  struct Slot {
    State state = State::kFree;
    Ipv6Addr src;
    Ipv6Addr dst;
    uint32_t id = 0;
    Instant expires;
    DropReason discard_reason = DropReason::kIpv6ReassemblyOverlap;
    uint32_t total = 0;  // fragmentable bytes, once the last fragment arrived
    bool have_last = false;
    uint32_t unfrag_len = 0;  // of the first fragment; 0 until it arrives
    uint32_t received = 0;
    std::vector<Frag> frags;  // sorted by offset
    std::unique_ptr<uint8_t[]> buf;
  };

  Slot* find(const Ipv6Addr& src, const Ipv6Addr& dst, uint32_t id);
  Slot* allocate(const Ipv6Addr& src, const Ipv6Addr& dst, uint32_t id, Instant now);
  void discard(Slot& s, DropReason reason, DropCounters& drops);
  // Places the fragment [off, off + len) unless it overlaps; false when discarded.
  bool place(Slot& s, const PacketView& data, uint32_t off, bool more, DropCounters& drops);
  std::span<const uint8_t> complete(Slot& s);
  void release(Slot& s);

  Ipv6ReassemblyConfig cfg_;
  std::vector<Slot> slots_;
  Instant next_deadline_ = Instant::never();
  uint64_t reassembled_ = 0;
};

}  // namespace ws
