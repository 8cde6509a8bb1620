// Deterministic two-stack simulator: a fake IP layer that checksums like the real
// one, a lossy/reordering/duplicating/corrupting link on a virtual clock, and helpers
// to craft and inspect segments.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <unordered_map>
#include <vector>

#include "stack/core/bytes.hpp"
#include "stack/core/checksum.hpp"
#include "stack/core/drops.hpp"
#include "stack/core/l4_output.hpp"
#include "stack/core/packet_view.hpp"
#include "stack/tcp/tcp_stack.hpp"
#include "stack/wire/tcp.hpp"

namespace ws::sim {

// Deterministic across platforms (unlike std:: distributions).
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 0x1234567) {}
  uint64_t next() {
    s += 0x9e3779b97f4a7c15ull;
    uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) / 9007199254740992.0; }
  bool chance(double p) { return p > 0 && uniform() < p; }
};

// The pseudo-random payload byte at stream offset i for a given seed.
inline uint8_t payload_byte(uint64_t seed, uint64_t i) {
  uint64_t z = (i >> 3) * 0x9e3779b97f4a7c15ull + seed * 0xd1b54a32d192ed03ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<uint8_t>(z >> ((i & 7) * 8));
}

struct Packet {
  IpAddr src, dst;
  std::vector<uint8_t> l4;
  wire::TcpView tcp() const { return *wire::TcpView::parse(l4); }
};

// The TCP checksum as the IP layer computes it on commit.
inline void fill_tcp_checksum(IpAddr src, IpAddr dst, std::span<uint8_t> l4) {
  store_be16(l4.data() + 16, 0);
  uint32_t s = pseudo_sum(src, dst, 6, static_cast<uint32_t>(l4.size()));
  store_be16(l4.data() + 16, csum_fold(csum_partial(l4, s)));
}

class FakeOutput : public L4Output {
 public:
  explicit FakeOutput(IpAddr self) : self_(self) {}
  bool begin(IpAddr src, IpAddr dst, uint8_t proto, uint32_t l4_len, L4Frame& out) override {
    if (fail_begin || l4_len + ip_header_len(dst) > mtu) {
      ++begin_failures;
      return false;
    }
    auto* v = new std::vector<uint8_t>(l4_len);
    out.buf.handle = v;
    out.l4 = std::span<uint8_t>(v->data(), v->size());
    out.src = src.is_any() ? self_ : src;
    out.dst = dst;
    out.proto = proto;
    return true;
  }
  // TSO as a port does it (when tso_max is set): the super-segment is cut into
  // segments of tso_segsz payload bytes, each with a copy of the header, its own
  // sequence number and checksum; FIN and PSH stay on the last one only.
  TsoLimits tso_limits_to(IpAddr) const override { return {tso_max, tso_segment_frame}; }
  bool begin_tso(IpAddr src, IpAddr dst, uint32_t header_len, uint32_t l4_len,
                 uint32_t segment_payload, L4Frame& out) override {
    if (tso_max == 0 || l4_len + 20 > tso_max || header_len > l4_len ||
        (l4_len - header_len) % segment_payload != 0) {
      ++begin_failures;
      return false;
    }
    if (!begin(src, dst, 6, header_len, out)) return false;
    auto* v = static_cast<std::vector<uint8_t>*>(out.buf.handle);
    v->resize(l4_len);
    out.l4 = std::span<uint8_t>(v->data(), v->size());
    out.buf.flags = kTxTcpSeg;
    out.buf.l4_len = static_cast<uint16_t>(header_len);
    out.buf.tso_segsz = static_cast<uint16_t>(segment_payload);
    return true;
  }
  void commit(L4Frame& f, Instant now) override {
    auto* v = static_cast<std::vector<uint8_t>*>(f.buf.handle);
    if (f.buf.flags & kTxTcpSeg) {
      ++tso_frames;
      cut(f, *v, now);
      delete v;
      return;
    }
    fill_tcp_checksum(f.src, f.dst, *v);
    Packet p{f.src, f.dst, std::move(*v)};
    delete v;
    ++sent;
    if (sink)
      sink(std::move(p), now);
    else
      captured.push_back(std::move(p));
  }
  void abort(L4Frame& f) override { delete static_cast<std::vector<uint8_t>*>(f.buf.handle); }
  void cut(const L4Frame& f, const std::vector<uint8_t>& v, Instant now) {
    const size_t hl = f.buf.l4_len;
    const size_t seg = f.buf.tso_segsz;
    const uint32_t seq0 = load_be32(v.data() + 4);
    for (size_t off = hl; off < v.size(); off += seg) {
      size_t n = std::min(seg, v.size() - off);
      Packet p{f.src, f.dst, std::vector<uint8_t>(hl + n)};
      std::copy(v.begin(), v.begin() + static_cast<ptrdiff_t>(hl), p.l4.begin());
      std::copy(v.begin() + static_cast<ptrdiff_t>(off),
                v.begin() + static_cast<ptrdiff_t>(off + n),
                p.l4.begin() + static_cast<ptrdiff_t>(hl));
      store_be32(p.l4.data() + 4, seq0 + static_cast<uint32_t>(off - hl));
      if (off + n < v.size())
        p.l4[13] &= static_cast<uint8_t>(~(wire::tcpflag::kFin | wire::tcpflag::kPsh));
      fill_tcp_checksum(p.src, p.dst, p.l4);
      ++sent;
      if (sink)
        sink(std::move(p), now);
      else
        captured.push_back(std::move(p));
    }
  }
  uint32_t mtu_to(IpAddr) const override { return mtu; }
  IpAddr source_for(IpAddr) const override { return self_; }
  uint32_t free_buffers_to(IpAddr) const override { return free_buffers; }

  IpAddr self_;
  uint32_t mtu = 1500;
  uint32_t free_buffers = 1u << 20;
  bool fail_begin = false;
  uint64_t begin_failures = 0;
  uint64_t sent = 0;
  uint32_t tso_max = 0;            // > 0: offer TSO up to this IPv4 packet size
  uint32_t tso_segment_frame = 0;  // > 0: cut segments are at most this long (L2 included)
  uint64_t tso_frames = 0;
  std::function<void(Packet&&, Instant)> sink;
  std::deque<Packet> captured;
};

struct LinkParams {
  double loss = 0;
  double dup = 0;
  double reorder = 0;  // probability of extra delay
  Duration reorder_extra = Duration::millis(3);
  double corrupt = 0;
  Duration delay = Duration::millis(5);
  double rate_bytes_per_sec = 125e6;          // 1 Gbit/s
  Duration max_queue = Duration::millis(20);  // drop-tail beyond this backlog
};

// One direction of the link.
class Link {
 public:
  Link(LinkParams p, uint64_t seed) : p_(p), rng_(seed) {}
  void send(Packet&& pkt, Instant now) {
    ++offered;
    if (rng_.chance(p_.loss)) {
      ++lost;
      return;
    }
    Instant depart = std::max(now, free_at_);
    if (depart - now > p_.max_queue) {
      ++queue_drops;
      return;
    }
    Duration ser =
        Duration::nanos(static_cast<int64_t>((pkt.l4.size() + 58) * 1e9 / p_.rate_bytes_per_sec));
    free_at_ = depart + ser;
    Instant at = free_at_ + p_.delay;
    if (rng_.chance(p_.reorder))
      at += Duration::nanos(static_cast<int64_t>(rng_.uniform() * p_.reorder_extra.ns()));
    if (rng_.chance(p_.corrupt) && !pkt.l4.empty()) {
      size_t i = rng_.next() % pkt.l4.size();
      pkt.l4[i] ^= static_cast<uint8_t>(1 + rng_.next() % 255);
      ++corrupted;
    }
    if (rng_.chance(p_.dup)) {
      ++duplicated;
      q_.push({at + Duration::micros(10), seq_++, pkt});
    }
    q_.push({at, seq_++, std::move(pkt)});
  }
  bool empty() const { return q_.empty(); }
  Instant next() const { return q_.empty() ? Instant::never() : q_.top().at; }
  Packet pop() {
    Packet p = std::move(const_cast<Item&>(q_.top()).pkt);
    q_.pop();
    return p;
  }
  LinkParams& params() { return p_; }

  uint64_t offered = 0, lost = 0, queue_drops = 0, corrupted = 0, duplicated = 0;

 private:
  struct Item {
    Instant at;
    uint64_t seq;
    Packet pkt;
    bool operator>(const Item& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  LinkParams p_;
  Rng rng_;
  Instant free_at_;
  uint64_t seq_ = 0;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> q_;
};

inline const Ipv4Addr kAddrA = Ipv4Addr::from_octets(10, 0, 0, 1);
inline const Ipv4Addr kAddrB = Ipv4Addr::from_octets(10, 0, 0, 2);

inline tcp::TcpConfig default_config(uint8_t key) {
  tcp::TcpConfig c;
  for (size_t i = 0; i < c.isn_secret.size(); ++i)
    c.isn_secret[i] = static_cast<uint8_t>(i * 7 + key);
  return c;
}

// Two stacks back to back.
struct Net {
  Net(LinkParams ab, LinkParams ba, uint64_t seed, tcp::TcpConfig ca = default_config(1),
      tcp::TcpConfig cb = default_config(2))
      : out_a(kAddrA),
        out_b(kAddrB),
        a(out_a, drops_a, std::move(ca)),
        b(out_b, drops_b, std::move(cb)),
        link_ab(ab, seed * 2 + 1),
        link_ba(ba, seed * 2 + 2) {
    now = Instant::from_ns(1'000'000'000);
    out_a.sink = [this](Packet&& p, Instant t) {
      if (tap_ab && !tap_ab(p)) return;
      link_ab.send(std::move(p), t);
    };
    out_b.sink = [this](Packet&& p, Instant t) {
      if (tap_ba && !tap_ba(p)) return;
      link_ba.send(std::move(p), t);
    };
  }

  // Advances to the next event; false when nothing is scheduled at all.
  bool step(Instant limit) {
    Instant na = a.poll(now), nb = b.poll(now);
    Instant next = earliest(earliest(na, nb), earliest(link_ab.next(), link_ba.next()));
    if (next.is_never() || next > limit) {
      now = limit;
      a.poll(now);
      b.poll(now);
      return false;
    }
    if (next <= now) {
      if (++same_time_ > 100000) {
        next = now + Duration::micros(1);
        same_time_ = 0;
      } else {
        next = now;
      }
    } else {
      same_time_ = 0;
    }
    now = next;
    while (!link_ab.empty() && link_ab.next() <= now) {
      Packet p = link_ab.pop();
      deliver(b, p);
    }
    while (!link_ba.empty() && link_ba.next() <= now) {
      Packet p = link_ba.pop();
      deliver(a, p);
    }
    return true;
  }
  // Hands `p` to `s` in one buffer or, with probability `chain`, as a chain of
  // 2 to 4 pieces cut at random offsets (half of the cuts inside the first 60
  // bytes, where the TCP header is; pieces may be empty or of odd length), as
  // the data plane passes a frame received in several mbufs.
  void deliver(tcp::TcpStack& s, const Packet& p) {
    if (hold > 0 && chain_rng.chance(hold)) {
      deliver_owned(s, p);
      return;
    }
    const size_t len = p.l4.size();
    if (len < 2 || !chain_rng.chance(chain)) {
      s.input(p.src, p.dst, p.l4, false, now);
      return;
    }
    std::array<size_t, 5> cut{};
    const size_t pieces = 2 + chain_rng.next() % 3;
    for (size_t i = 1; i < pieces; ++i) {
      size_t span = chain_rng.chance(0.5) ? std::min<size_t>(60, len - 1) : len - 1;
      size_t c = 1 + chain_rng.next() % span;
      size_t j = i;  // keep the cuts sorted
      for (; j > 1 && cut[j - 1] > c; --j) cut[j] = cut[j - 1];
      cut[j] = c;
    }
    cut[pieces] = len;
    std::array<PacketView::Segment, 4> segs;
    for (size_t i = 0; i < pieces; ++i)
      segs[i] = std::span<const uint8_t>(p.l4).subspan(cut[i], cut[i + 1] - cut[i]);
    ++chained;
    s.input(p.src, p.dst, PacketView(std::span(segs.data(), pieces), len), false, now);
  }
  // The same through a buffer owner the stack may keep the bytes with (as the data
  // plane's mbufs): the frame lives in its own heap buffer, freed when the last
  // reference goes. Now and then the owner runs "low": it refuses to be held and
  // the stack is asked to give back what it holds (TcpStack::release_held).
  void deliver_owned(tcp::TcpStack& s, const Packet& p) {
    auto buf = std::make_shared<std::vector<uint8_t>>(p.l4);
    owner.low = squeeze > 0 && chain_rng.chance(squeeze);
    if (owner.low) owner.given_back += s.release_held();
    const size_t len = buf->size();
    std::array<PacketView::Segment, 4> segs;
    size_t pieces = 1;
    segs[0] = std::span<const uint8_t>(*buf);
    if (len >= 2 && chain_rng.chance(chain)) {
      // Cut in two or three at random places, as a chain of mbufs.
      size_t c1 = 1 + chain_rng.next() % (len - 1);
      size_t c2 = c1 + (c1 + 1 < len ? chain_rng.next() % (len - c1) : 0);
      segs[0] = std::span<const uint8_t>(*buf).first(c1);
      segs[1] = std::span<const uint8_t>(*buf).subspan(c1, c2 - c1);
      segs[2] = std::span<const uint8_t>(*buf).subspan(c2);
      pieces = 3;
      ++chained;
    }
    PacketView v(std::span(segs.data(), pieces), len);
    v.set_owner(&owner, buf.get());
    owner.live[buf.get()] = {buf, 0};
    s.input(p.src, p.dst, v, false, now);
    auto it = owner.live.find(buf.get());
    if (it != owner.live.end() && it->second.second == 0) owner.live.erase(it);
    owner.low = false;
  }
  struct Owner final : RxHolder {
    // frame -> (its buffer, references the stack holds)
    std::unordered_map<const void*, std::pair<std::shared_ptr<std::vector<uint8_t>>, int>> live;
    bool low = false;
    uint64_t retained = 0, released = 0, refused = 0, given_back = 0;
    bool retain(const void* f) override {
      auto it = live.find(f);
      if (it == live.end()) return false;
      if (low) {
        ++refused;
        return false;
      }
      ++it->second.second;
      ++retained;
      return true;
    }
    void release(const void* f) override {
      auto it = live.find(f);
      if (it == live.end()) {
        ++bad_releases;
        return;
      }
      ++released;
      if (--it->second.second == 0) live.erase(it);
    }
    uint64_t bad_releases = 0;
    // Frames the stacks still hold.
    size_t held() const { return live.size(); }
  };

  void run_for(Duration d) {
    Instant end = now + d;
    while (now < end && step(end)) {
    }
  }
  bool run_until(const std::function<bool()>& done, Duration max) {
    Instant end = now + max;
    while (!done()) {
      if (now >= end) return false;
      if (!step(end) && !done()) return done();
    }
    return true;
  }

  // Declared before the stacks: they give held buffers back when destroyed.
  Owner owner;
  FakeOutput out_a, out_b;
  DropCounters drops_a, drops_b;
  tcp::TcpStack a, b;
  Link link_ab, link_ba;
  Instant now;
  std::function<bool(Packet&)> tap_ab, tap_ba;  // return false to drop
  double chain = 0;                             // share of packets delivered as chains
  double hold = 0;     // share of packets delivered through `owner` (may be held)
  double squeeze = 0;  // share of those deliveries when the owner is low
  Rng chain_rng{77};
  uint64_t chained = 0;
  uint64_t same_time_ = 0;
};

// Builds a segment as a peer would (for scripted scenarios).
inline std::vector<uint8_t> make_segment(IpAddr src, IpAddr dst, const wire::TcpRepr& r,
                                         std::span<const uint8_t> payload = {}) {
  std::vector<uint8_t> v(r.header_len() + payload.size());
  size_t hl = wire::emit_tcp(v.data(), r);
  std::copy(payload.begin(), payload.end(), v.begin() + static_cast<ptrdiff_t>(hl));
  fill_tcp_checksum(src, dst, v);
  return v;
}

}  // namespace ws::sim
