// Micro benchmarks (Google Benchmark) of the stack's hot pieces, without DPDK:
//   - ws::csum_partial over 64, 1500 and 9000 bytes;
//   - ws::Stack::receive of a UDP datagram to an echo socket that answers it
//     (parse, validate, checksum, demux, build and checksum the reply), on a
//     PacketIo that recycles one buffer;
//   - ws::FrameDecoder over a 1 MiB length32 stream cut into 1448-byte reads.
// Run: build-bench/tests/bench/micro_bench  (or `meson test -C build-bench --benchmark`).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "stack/codec/framing.hpp"
#include "stack/core/addr.hpp"
#include "stack/core/checksum.hpp"
#include "stack/core/packet.hpp"
#include "stack/core/time.hpp"
#include "stack/iface/stack.hpp"
#include "stack/steer/flow_owner.hpp"

namespace {

// --- csum_partial --------------------------------------------------------------------

void BM_CsumPartial(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> buf(n);
  for (size_t i = 0; i < n; ++i) buf[i] = static_cast<uint8_t>(i * 131u + 7u);
  uint32_t sum = 0;
  for (auto _ : state) {
    sum = ws::csum_partial(std::span<const uint8_t>(buf.data(), buf.size()), sum);
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n));
}
BENCHMARK(BM_CsumPartial)->Arg(64)->Arg(1500)->Arg(9000);

// --- Stack::receive of a UDP echo round trip -------------------------------------------

// A PacketIo that owns one buffer and hands it out again as soon as it is sent:
// the cost measured is the stack's, not an allocator's.
class RecyclingIo final : public ws::PacketIo {
 public:
  bool alloc_tx(uint32_t len, ws::TxBuf& out) override {
    if (len > kRoom || busy_) return false;
    busy_ = true;
    out = ws::TxBuf{};
    out.data = mem_.get();
    out.capacity = kRoom;
    out.handle = mem_.get();
    return true;
  }
  bool transmit(ws::TxBuf& buf) override {
    busy_ = false;
    ++sent_;
    last_len_ = buf.len;
    return true;
  }
  void release(ws::TxBuf&) override { busy_ = false; }
  ws::TxOffloads tx_offloads() const override { return {}; }
  uint32_t max_frame_len() const override { return 1514; }
  uint32_t free_buffers() const override { return busy_ ? 0 : 1; }

  uint64_t sent() const { return sent_; }
  uint32_t last_len() const { return last_len_; }

 private:
  static constexpr uint32_t kRoom = 2048;
  std::unique_ptr<uint8_t[]> mem_ = std::make_unique<uint8_t[]>(kRoom);
  bool busy_ = false;
  uint64_t sent_ = 0;
  uint32_t last_len_ = 0;
};

constexpr ws::MacAddr kOurMac{{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}};
constexpr ws::MacAddr kPeerMac{{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}};
constexpr ws::Ipv4Addr kOurIp = ws::Ipv4Addr::from_octets(10, 0, 0, 1);
constexpr ws::Ipv4Addr kPeerIp = ws::Ipv4Addr::from_octets(10, 0, 0, 2);

void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void put32(uint8_t* p, uint32_t v) {
  put16(p, static_cast<uint16_t>(v >> 16));
  put16(p + 2, static_cast<uint16_t>(v));
}

std::vector<uint8_t> arp_reply_frame() {
  std::vector<uint8_t> f(42, 0);
  kOurMac.to_bytes(&f[0]);
  kPeerMac.to_bytes(&f[6]);
  put16(&f[12], 0x0806);
  uint8_t* a = &f[14];
  put16(a + 0, 1);       // Ethernet
  put16(a + 2, 0x0800);  // IPv4
  a[4] = 6;
  a[5] = 4;
  put16(a + 6, 2);  // reply
  kPeerMac.to_bytes(a + 8);
  put32(a + 14, kPeerIp.v);
  kOurMac.to_bytes(a + 18);
  put32(a + 24, kOurIp.v);
  return f;
}

// Ethernet + IPv4 + UDP from the peer to our port 7, with correct checksums.
std::vector<uint8_t> udp_frame(size_t payload_len) {
  const size_t ip_len = 20 + 8 + payload_len;
  std::vector<uint8_t> f(14 + ip_len, 0);
  kOurMac.to_bytes(&f[0]);
  kPeerMac.to_bytes(&f[6]);
  put16(&f[12], 0x0800);
  uint8_t* ip = &f[14];
  ip[0] = 0x45;
  put16(ip + 2, static_cast<uint16_t>(ip_len));
  put16(ip + 4, 1);
  put16(ip + 6, 0x4000);
  ip[8] = 64;
  ip[9] = 17;
  put32(ip + 12, kPeerIp.v);
  put32(ip + 16, kOurIp.v);
  put16(ip + 10, ws::internet_checksum(std::span<const uint8_t>(ip, 20)));
  uint8_t* udp = ip + 20;
  put16(udp + 0, 40000);
  put16(udp + 2, 7);
  put16(udp + 4, static_cast<uint16_t>(8 + payload_len));
  for (size_t i = 0; i < payload_len; ++i) udp[8 + i] = static_cast<uint8_t>(i);
  const uint32_t pseudo =
      ws::ipv4_pseudo_sum(kPeerIp, kOurIp, 17, static_cast<uint16_t>(8 + payload_len));
  uint16_t c =
      ws::csum_fold(ws::csum_partial(std::span<const uint8_t>(udp, 8 + payload_len), pseudo));
  if (c == 0) c = 0xffff;
  put16(udp + 6, c);
  return f;
}

void BM_StackUdpEcho(benchmark::State& state) {
  const auto payload = static_cast<size_t>(state.range(0));
  const bool nic_checked = state.range(1) != 0;
  RecyclingIo io;
  ws::Stack stack;
  ws::InterfaceConfig ifc;
  ifc.name = "bench0";
  ifc.mac = kOurMac;
  ifc.address = ws::Ipv4Cidr{kOurIp, 24};
  ifc.mtu = 1500;
  const uint16_t port = stack.add_interface(ifc, io);
  ws::Instant now = ws::Instant::from_ns(1'000'000'000);
  stack.start(now);
  uint64_t echoed = 0;
  stack.udp_bind(7, [&echoed](ws::UdpSocket& s, const ws::UdpDatagram& d, ws::Instant t) {
    if (s.send_to(d.src, d.payload, t)) ++echoed;
  });
  ws::RxMeta meta;
  meta.port = port;
  const auto arp = arp_reply_frame();
  stack.receive(arp, meta, now);
  if (nic_checked) {
    meta.ip = ws::RxMeta::Cksum::kGood;
    meta.l4 = ws::RxMeta::Cksum::kGood;
  }
  const auto frame = udp_frame(payload);
  const uint64_t sent_before = io.sent();
  for (auto _ : state) {
    stack.receive(frame, meta, now);
    benchmark::ClobberMemory();
  }
  const uint64_t replies = io.sent() - sent_before;
  if (replies != static_cast<uint64_t>(state.iterations()) || io.last_len() != frame.size()) {
    state.SkipWithError("the stack did not answer every datagram with an echo of the same size");
  }
  state.counters["echoed"] = static_cast<double>(echoed);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(frame.size()));
}
// Args: payload bytes, RX checksums already verified by the NIC (1) or checked in software (0).
BENCHMARK(BM_StackUdpEcho)
    ->ArgNames({"payload", "nic_csum"})
    ->Args({18, 0})
    ->Args({18, 1})
    ->Args({1472, 0})
    ->Args({1472, 1});

// --- FrameDecoder over a 1 MiB stream --------------------------------------------------

std::vector<uint8_t> encoded_stream(uint32_t message_size, size_t total) {
  std::vector<uint8_t> out(total);
  ws::FrameEncoder enc(ws::Framing::kLength32, message_size);
  size_t pos = 0;
  while (pos < total) {
    const size_t n = enc.produce(std::span<uint8_t>(out.data() + pos, total - pos), UINT64_MAX);
    if (n == 0) break;
    pos += n;
  }
  out.resize(pos);
  return out;
}

void BM_FrameDecoder1MiB(benchmark::State& state) {
  const auto message_size = static_cast<uint32_t>(state.range(0));
  const bool collect = state.range(1) != 0;
  constexpr size_t kStream = 1 << 20;
  constexpr size_t kRead = 1448;  // one MSS per read, as TCP delivers it
  const auto stream = encoded_stream(message_size, kStream);
  uint64_t messages = 0;
  for (auto _ : state) {
    ws::FrameDecoderConfig cfg;
    cfg.collect = collect;
    cfg.max_message_bytes = collect ? (2u << 20) : ws::kDefaultMaxMessageBytes;
    state.PauseTiming();
    ws::FrameDecoder dec(cfg);
    state.ResumeTiming();
    messages = 0;
    for (size_t off = 0; off < stream.size(); off += kRead) {
      const size_t n = std::min(kRead, stream.size() - off);
      dec.feed(std::span<const uint8_t>(stream.data() + off, n), [&](const ws::FrameEvent& ev) {
        if (ev.kind == ws::FrameEventKind::kMessageComplete) ++messages;
        benchmark::DoNotOptimize(ev.data.data());
      });
    }
    benchmark::DoNotOptimize(messages);
  }
  state.counters["messages"] = static_cast<double>(messages);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(stream.size()));
}
// Args: message size in the stream, collect mode.
BENCHMARK(BM_FrameDecoder1MiB)
    ->ArgNames({"msg", "collect"})
    ->Args({64, 0})
    ->Args({1024, 0})
    ->Args({65536, 0})
    ->Args({1048572, 0})
    ->Args({1024, 1});

// --- software RSS: the owner of a received frame ------------------------------------

// What each core pays per frame on a port steered in software (dataplane/steering.hpp):
// Ethernet and IPv4 parsed, the 4-tuple hashed. 64 TCP frames of different flows in turn.
void BM_FlowOwnerOfFrame(benchmark::State& state) {
  ws::FlowOwner owner(static_cast<uint32_t>(state.range(0)), {});
  std::vector<std::vector<uint8_t>> frames(64, std::vector<uint8_t>(54, 0));
  for (size_t i = 0; i < frames.size(); ++i) {
    uint8_t* f = frames[i].data();
    put16(f + 12, 0x0800);
    f[14] = 0x45;
    put16(f + 16, 40);
    f[14 + 9] = 6;
    put32(f + 14 + 12, 0x0a510002);
    put32(f + 14 + 16, 0x0a510001);
    put16(f + 34, static_cast<uint16_t>(40000 + i));
    put16(f + 36, 7);
  }
  size_t i = 0;
  uint64_t sum = 0;
  for (auto _ : state) {
    sum += owner.of_frame(frames[i++ & 63], 0);
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_FlowOwnerOfFrame)->ArgName("cores")->Arg(2)->Arg(8);

}  // namespace

BENCHMARK_MAIN();
