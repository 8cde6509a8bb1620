#include "stack/iface/ipv6_reassembly.hpp"

#include <algorithm>
#include <cstring>

#include "stack/core/bytes.hpp"

namespace ws {

Ipv6Reassembler::Ipv6Reassembler(Ipv6ReassemblyConfig cfg) : cfg_(cfg) {
  cfg_.max_entries = std::max<uint32_t>(cfg_.max_entries, 1);
  cfg_.max_fragments = std::max<uint32_t>(cfg_.max_fragments, 1);
  slots_.resize(cfg_.max_entries);
}

size_t Ipv6Reassembler::entries() const {
  return static_cast<size_t>(std::count_if(slots_.begin(), slots_.end(),
                                           [](const Slot& s) { return s.state != State::kFree; }));
}

Ipv6Reassembler::Slot* Ipv6Reassembler::find(const Ipv6Addr& src, const Ipv6Addr& dst,
                                             uint32_t id) {
  for (auto& s : slots_) {
    if (s.state != State::kFree && s.id == id && s.src == src && s.dst == dst) return &s;
  }
  return nullptr;
}

Ipv6Reassembler::Slot* Ipv6Reassembler::allocate(const Ipv6Addr& src, const Ipv6Addr& dst,
                                                 uint32_t id, Instant now) {
  for (auto& s : slots_) {
    if (s.state != State::kFree) continue;
    s.state = State::kActive;
    s.src = src;
    s.dst = dst;
    s.id = id;
    s.expires = now + cfg_.timeout;  // from the first fragment; later ones do not extend it
    next_deadline_ = earliest(next_deadline_, s.expires);
    if (!s.buf) s.buf = std::make_unique<uint8_t[]>(kHeadroom + kMaxPayload);
    return &s;
  }
  return nullptr;
}

void Ipv6Reassembler::release(Slot& s) {
  s.state = State::kFree;
  s.frags.clear();
  s.received = 0;
  s.total = 0;
  s.have_last = false;
  s.unfrag_len = 0;
}

void Ipv6Reassembler::discard(Slot& s, DropReason reason, DropCounters& drops) {
  drops.add(reason, s.frags.size() + 1);
  s.state = State::kDiscarded;
  s.discard_reason = reason;
  s.frags.clear();
  s.received = 0;
}

bool Ipv6Reassembler::place(Slot& s, const PacketView& data, uint32_t off, bool more,
                            DropCounters& drops) {
  const auto len = static_cast<uint32_t>(data.size());
  const uint32_t end = off + len;
  // The last fragment fixes the length; nothing may lie beyond it.
  const bool beyond = more ? (s.have_last && end > s.total)
                           : ((s.have_last && s.total != end) ||
                              (!s.frags.empty() && s.frags.back().off + s.frags.back().len > end));
  auto it = std::find_if(s.frags.begin(), s.frags.end(),
                         [off](const Frag& f) { return f.off + f.len > off; });
  if (!beyond && it != s.frags.end() && it->off < end) {
    uint8_t* held = s.buf.get() + kHeadroom + off;
    bool same = it->off == off && it->len == len;
    size_t pos = 0;
    data.for_each([&](std::span<const uint8_t> p) {
      same = same && std::memcmp(held + pos, p.data(), p.size()) == 0;
      pos += p.size();
    });
    if (same) return false;  // an exact duplicate: ignored, the packet goes on
  }
  if (beyond || (it != s.frags.end() && it->off < end)) {
    discard(s, DropReason::kIpv6ReassemblyOverlap, drops);
    return false;
  }
  if (s.frags.size() >= cfg_.max_fragments) {
    discard(s, DropReason::kIpv6ReassemblyTooManyFragments, drops);
    return false;
  }
  data.copy_out(0, std::span<uint8_t>(s.buf.get() + kHeadroom + off, len));
  s.frags.insert(it, Frag{off, len});
  s.received += len;
  if (!more) {
    s.have_last = true;
    s.total = end;
  }
  return true;
}

std::optional<std::span<const uint8_t>> Ipv6Reassembler::input(const PacketView& pkt,
                                                               const wire::Ipv6FragmentInfo& f,
                                                               Instant now, DropCounters& drops) {
  const uint32_t unfrag = wire::Ipv6View::kHeaderLen + f.header_off;
  const uint32_t data_at = unfrag + static_cast<uint32_t>(wire::kIpv6FragmentHeaderLen);
  const PacketView data = pkt.tail(data_at);
  uint8_t fixed[wire::Ipv6View::kHeaderLen];
  pkt.copy_out(0, fixed);
  const auto ip = *wire::Ipv6View::parse(fixed);
  Slot* s = find(ip.src(), ip.dst(), f.ident);
  if (s != nullptr && s->state == State::kDiscarded) {
    drops.add(s->discard_reason);  // RFC 5722: later fragments of it go too
    return std::nullopt;
  }
  // RFC 8200 4.5: a packet whose reassembled payload would pass 65535 bytes.
  if (unfrag - wire::Ipv6View::kHeaderLen + f.offset + data.size() > kMaxPayload ||
      unfrag > kHeadroom) {
    if (s != nullptr) {
      discard(*s, DropReason::kIpv6ReassemblyTooLarge, drops);
    } else {
      drops.add(DropReason::kIpv6ReassemblyTooLarge);
    }
    return std::nullopt;
  }
  if (s == nullptr) s = allocate(ip.src(), ip.dst(), f.ident, now);
  if (s == nullptr) {
    drops.add(DropReason::kIpv6ReassemblyTableFull);
    return std::nullopt;
  }
  if (!place(*s, data, f.offset, f.more, drops)) return std::nullopt;
  if (f.offset == 0) {
    // The first fragment's unfragmentable part heads the packet; its Next Header that
    // named the Fragment header now names what the fragments carry (RFC 8200 4.5).
    uint8_t* h = s->buf.get() + kHeadroom - unfrag;
    pkt.copy_out(0, std::span<uint8_t>(h, unfrag));
    h[f.named_at] = f.next_header;
    s->unfrag_len = unfrag;
  }
  if (!s->have_last || s->unfrag_len == 0 || s->received != s->total) return std::nullopt;
  if (s->unfrag_len - wire::Ipv6View::kHeaderLen + s->total > kMaxPayload) {
    discard(*s, DropReason::kIpv6ReassemblyTooLarge, drops);
    return std::nullopt;
  }
  return complete(*s);
}

std::span<const uint8_t> Ipv6Reassembler::complete(Slot& s) {
  uint8_t* h = s.buf.get() + kHeadroom - s.unfrag_len;
  const uint32_t len = s.unfrag_len + s.total;
  store_be16(h + wire::Ipv6View::kPayloadLenOff,
             static_cast<uint16_t>(len - wire::Ipv6View::kHeaderLen));
  ++reassembled_;
  release(s);  // the buffer keeps its bytes until the slot is used again
  next_deadline_ = Instant::never();
  for (const auto& x : slots_) {
    if (x.state != State::kFree) next_deadline_ = earliest(next_deadline_, x.expires);
  }
  return {h, len};
}

Instant Ipv6Reassembler::poll(Instant now, DropCounters& drops, const ExpiredFn& on_expired) {
  if (now < next_deadline_) return next_deadline_;
  next_deadline_ = Instant::never();
  for (auto& s : slots_) {
    if (s.state == State::kFree) continue;
    if (s.expires > now) {
      next_deadline_ = earliest(next_deadline_, s.expires);
      continue;
    }
    if (s.state == State::kActive) {
      drops.add(DropReason::kIpv6ReassemblyTimeout, s.frags.size());
      if (on_expired && s.unfrag_len != 0 && !s.frags.empty() && s.frags.front().off == 0) {
        uint8_t* h = s.buf.get() + kHeadroom - s.unfrag_len;
        const uint32_t len = s.unfrag_len + s.frags.front().len;
        store_be16(h + wire::Ipv6View::kPayloadLenOff,
                   static_cast<uint16_t>(len - wire::Ipv6View::kHeaderLen));
        on_expired({h, len});
      }
    }
    release(s);
  }
  return next_deadline_;
}

}  // namespace ws
