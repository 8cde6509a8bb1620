#include "stack/iface/reassembly.hpp"

#include <algorithm>
#include <cstring>

#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"
#include "stack/wire/ipv4.hpp"

namespace ws {

using wire::Ipv4View;

Reassembler::Reassembler(ReassemblyConfig cfg) : cfg_(cfg) {
  cfg_.max_entries = std::max<uint32_t>(cfg_.max_entries, 1);
  cfg_.max_fragments = std::max<uint32_t>(cfg_.max_fragments, 1);
  cfg_.max_datagram = std::clamp<uint32_t>(cfg_.max_datagram, 68, 65535);
  slots_.resize(cfg_.max_entries);
}

size_t Reassembler::entries() const {
  size_t n = 0;
  for (const auto& s : slots_) n += s.state != State::kFree ? 1 : 0;
  return n;
}

Reassembler::Slot* Reassembler::find(Ipv4Addr src, Ipv4Addr dst, uint8_t proto, uint16_t id) {
  for (auto& s : slots_) {
    if (s.state != State::kFree && s.id == id && s.src == src && s.dst == dst && s.proto == proto) {
      return &s;
    }
  }
  return nullptr;
}

Reassembler::Slot* Reassembler::allocate(DropCounters& drops) {
  Slot* oldest = nullptr;
  for (auto& s : slots_) {
    if (s.state == State::kFree) return &s;
    if (oldest == nullptr || s.expires < oldest->expires) oldest = &s;
  }
  // Every slot has the same timeout, so the earliest deadline is the oldest datagram.
  // A discarded slot's fragments were counted when it was discarded.
  if (oldest->state == State::kActive) {
    drops.add(DropReason::kIpv4ReassemblyEvicted, oldest->frags.size());
  }
  ++stats_.evicted;
  release(*oldest);
  return oldest;
}

void Reassembler::release(Slot& s) {
  s.state = State::kFree;
  s.frags.clear();  // keeps its capacity: a reused slot does not allocate
  stats_.held_bytes -= s.received;
  s.received = 0;
  s.total = 0;
  s.have_last = false;
  s.header_len = 0;
  --stats_.entries_in_use;
}

void Reassembler::discard(Slot& s, DropReason reason, DropCounters& drops) {
  drops.add(reason, s.frags.size() + 1);
  s.state = State::kDiscarded;
  s.discard_reason = reason;
  s.frags.clear();
  stats_.held_bytes -= s.received;
  s.received = 0;
  s.header_len = 0;
}

void Reassembler::recompute_deadline() {
  next_deadline_ = Instant::never();
  for (const auto& s : slots_) {
    if (s.state != State::kFree) next_deadline_ = earliest(next_deadline_, s.expires);
  }
}

Reassembler::Slot* Reassembler::open(Ipv4Addr src, Ipv4Addr dst, uint8_t proto, uint16_t id,
                                     Instant now, DropCounters& drops) {
  Slot* s = allocate(drops);
  s->state = State::kActive;
  s->src = src;
  s->dst = dst;
  s->proto = proto;
  s->id = id;
  // RFC 1122 3.3.2: the timer starts with the first fragment to arrive and is
  // not extended by later ones.
  s->expires = now + cfg_.timeout;
  next_deadline_ = earliest(next_deadline_, s->expires);
  ++stats_.entries_in_use;
  if (!s->buf) {
    s->buf = std::make_unique<uint8_t[]>(kHeadroom + cfg_.max_datagram);
    stats_.buffer_bytes += kHeadroom + cfg_.max_datagram;
  }
  return s;
}

bool Reassembler::place(Slot& s, uint32_t off, std::span<const uint8_t> payload, bool more,
                        DropCounters& drops) {
  const auto len = static_cast<uint32_t>(payload.size());
  const uint32_t end = off + len;
  // The last fragment fixes the length; nothing may lie beyond it and a second
  // "last" fragment must agree (RFC 815's hole descriptor "infinity" case).
  if (!more) {
    if ((s.have_last && s.total != end) ||
        (!s.frags.empty() && s.frags.back().off + s.frags.back().len > end)) {
      discard(s, DropReason::kIpv4ReassemblyOverlap, drops);
      return false;
    }
  } else if (s.have_last && end > s.total) {
    discard(s, DropReason::kIpv4ReassemblyOverlap, drops);
    return false;
  }

  // Overlap check against the sorted fragment list: the first fragment that ends
  // after our start is the only candidate for the insertion point.
  auto it = std::find_if(s.frags.begin(), s.frags.end(),
                         [off](const Frag& f) { return f.off + f.len > off; });
  if (it != s.frags.end() && it->off < end) {
    uint8_t* held = s.buf.get() + kHeadroom + off;
    if (it->off == off && it->len == len && std::memcmp(held, payload.data(), len) == 0) {
      ++stats_.duplicates;  // an exact duplicate (RFC 5722 errata): ignore it
      return false;
    }
    discard(s, DropReason::kIpv4ReassemblyOverlap, drops);
    return false;
  }
  if (s.frags.size() >= cfg_.max_fragments) {
    discard(s, DropReason::kIpv4ReassemblyTooManyFragments, drops);
    return false;
  }

  std::memcpy(s.buf.get() + kHeadroom + off, payload.data(), len);
  s.frags.insert(it, Frag{off, len});
  s.received += len;
  stats_.held_bytes += len;
  if (!more) {
    s.have_last = true;
    s.total = end;
  }
  return true;
}

std::optional<std::span<const uint8_t>> Reassembler::complete(Slot& s, DropCounters& drops) {
  const size_t fhl = s.header_len;
  if (fhl + s.total > cfg_.max_datagram) {  // the first header had options
    discard(s, DropReason::kIpv4ReassemblyTooLarge, drops);
    return std::nullopt;
  }
  uint8_t* h = s.buf.get() + kHeadroom - fhl;
  store_be16(h + Ipv4View::kTotalLenOff, static_cast<uint16_t>(fhl + s.total));
  store_be16(h + Ipv4View::kFlagsFragOff, 0);
  store_be16(h + Ipv4View::kChecksumOff, 0);
  store_be16(h + Ipv4View::kChecksumOff, internet_checksum({h, fhl}));
  std::span<const uint8_t> whole{h, fhl + s.total};
  ++stats_.reassembled;
  release(s);  // the buffer keeps its bytes until the slot is reused
  recompute_deadline();
  return whole;
}

std::optional<std::span<const uint8_t>> Reassembler::input(std::span<const uint8_t> pkt,
                                                           Instant now, DropCounters& drops) {
  ++stats_.fragments_in;
  auto ip = Ipv4View::parse(pkt);
  if (!ip) {
    drops.add(DropReason::kIpv4Fragment);
    return std::nullopt;
  }
  const size_t hl = ip->header_len();
  const auto payload = pkt.subspan(hl, ip->total_len() - hl);
  const uint32_t off = ip->frag_offset();
  const auto len = static_cast<uint32_t>(payload.size());
  const bool more = ip->more_fragments();

  // RFC 791 3.2: every fragment but the last carries a multiple of 8 data bytes.
  // An empty fragment adds nothing and is a classic evasion trick: refuse both.
  if (len == 0 || (more && len % 8 != 0)) {
    drops.add(DropReason::kIpv4Fragment);
    return std::nullopt;
  }

  Slot* s = find(ip->src(), ip->dst(), ip->protocol(), ip->ident());
  if (s != nullptr && s->state == State::kDiscarded) {
    // RFC 5722 section 4: once a datagram was discarded, its later fragments are too.
    drops.add(s->discard_reason);
    return std::nullopt;
  }
  // The reassembled datagram may not exceed the configured maximum (65535 at most,
  // the largest total length IPv4 can express).
  if (hl + off + len > cfg_.max_datagram) {
    if (s != nullptr) {
      discard(*s, DropReason::kIpv4ReassemblyTooLarge, drops);
    } else {
      drops.add(DropReason::kIpv4ReassemblyTooLarge);
    }
    return std::nullopt;
  }
  if (s == nullptr) s = open(ip->src(), ip->dst(), ip->protocol(), ip->ident(), now, drops);
  if (!place(*s, off, payload, more, drops)) return std::nullopt;
  if (off == 0) {
    // RFC 791 3.2: the reassembled datagram carries the first fragment's header
    // (options included).
    std::memcpy(s->buf.get() + kHeadroom - hl, pkt.data(), hl);
    s->header_len = static_cast<uint16_t>(hl);
  }

  if (!s->have_last || s->header_len == 0 || s->received != s->total) return std::nullopt;
  return complete(*s, drops);
}

Instant Reassembler::poll(Instant now, DropCounters& drops, const ExpiredFn& on_expired) {
  if (now < next_deadline_) return next_deadline_;
  for (auto& s : slots_) {
    if (s.state == State::kFree || s.expires > now) continue;
    if (s.state == State::kActive) {
      drops.add(DropReason::kIpv4ReassemblyTimeout, s.frags.size());
      ++stats_.timed_out;
      if (s.header_len != 0 && on_expired && !s.frags.empty() && s.frags.front().off == 0) {
        on_expired({s.buf.get() + kHeadroom - s.header_len, s.header_len + s.frags.front().len});
      }
    }
    release(s);
  }
  recompute_deadline();
  return next_deadline_;
}

}  // namespace ws
