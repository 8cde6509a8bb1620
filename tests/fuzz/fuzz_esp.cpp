// The ESP input path of a whole stack: SPI lookup, lengths, the replay window, decryption,
// the ICV, the trailer and padding, and the inner packet's second trip through IPv4 input
// and the policy check. Byte 0 picks one of two inbound SAs (AES-GCM-128 transport, window
// 64; AES-CBC-256 + HMAC tunnel with ESN, window 32) and an SPI to claim; the rest follows
// the ESP header. The SAs' replay windows and counters start afresh for every input, so a
// result never depends on the previous input. Invariants: every input is counted somewhere (a drop
// or a packet of the SA), and a packet is delivered only when the SA counted it as authentic.
#include <cstring>

#include "stack/core/bytes.hpp"
#include "stack/iface/stack.hpp"
#include "stack/ipsec/esp.hpp"
#include "stack/ipsec/esp_layer.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/udp.hpp"
#include "tests/fuzz/null_io.hpp"
#include "tests/fuzz/seeds.hpp"

namespace {

using namespace ws;

using fuzz::NullIo;

const Ipv4Addr kUs = Ipv4Addr::from_octets(10, 99, 0, 2);
const Ipv4Addr kPeer = Ipv4Addr::from_octets(10, 99, 0, 1);
constexpr uint32_t kSpis[2] = {0x1001, 0x2002};
constexpr ipsec::Cipher kCiphers[2] = {ipsec::Cipher::aes_gcm_128,
                                       ipsec::Cipher::aes_cbc_256_hmac_sha256};

std::vector<uint8_t> key(ipsec::Cipher c) {
  std::vector<uint8_t> k(ipsec::key_material_bytes(c));
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(0x30 + i);
  return k;
}

ipsec::SaSpec spec(int i, ipsec::Direction d) {
  ipsec::SaSpec s;
  s.name = (d == ipsec::Direction::inbound ? "in" : "out") + std::to_string(i);
  s.direction = d;
  s.spi = kSpis[i];
  s.mode = i == 0 ? ipsec::Mode::transport : ipsec::Mode::tunnel;
  s.local = kUs;
  s.remote = kPeer;
  s.cipher = kCiphers[i];
  s.key = ipsec::KeyMaterial(key(kCiphers[i]));
  s.replay_window = i == 0 ? 64 : 32;
  s.esn = i == 1;
  return s;
}

struct Host {
  NullIo io;
  ipsec::EspLayer esp;  // outlives the stack
  Stack stack;
  size_t delivered = 0;
  Host() {
    InterfaceConfig c;
    c.name = "fuzz0";
    c.mac = MacAddr{{0x02, 0, 0, 0, 0, 2}};
    c.address = Ipv4Cidr{kUs, 24};
    c.mtu = 9000;
    stack.add_interface(c, io);
    const ipsec::SaSpec sas[] = {
        spec(0, ipsec::Direction::inbound), spec(1, ipsec::Direction::inbound),
        spec(0, ipsec::Direction::outbound), spec(1, ipsec::Direction::outbound)};
    // Protect on UDP port 53 through SA 0, everything else through SA 1.
    ipsec::PolicySpec p0;
    p0.remote = Ipv4Cidr{kPeer, 32};
    p0.protocol = wire::kIpProtoUdp;
    p0.local_port = 53;
    p0.action = ipsec::PolicyAction::protect;
    p0.outbound_sa = "out0";
    p0.inbound_sa = "in0";
    ipsec::PolicySpec p1 = p0;
    p1.protocol = 0;
    p1.local_port.reset();
    p1.outbound_sa = "out1";
    p1.inbound_sa = "in1";
    const ipsec::PolicySpec policies[] = {p0, p1};
    std::string err;
    std::vector<std::string> warnings;  // no state directory: the outbound SAs stay stopped
    WS_FUZZ_CHECK(esp.init(sas, policies, "/nonexistent-ws-fuzz", err, warnings));
    stack.set_ipsec(&esp);
    stack.udp_bind(53, [this](UdpSocket&, const UdpDatagram&, Instant) { ++delivered; });
  }
};

std::vector<uint8_t> frame(std::span<const uint8_t> esp) {
  std::vector<uint8_t> f(14 + 20 + esp.size());
  wire::emit_ethernet(f.data(), MacAddr{{0x02, 0, 0, 0, 0, 2}}, MacAddr{{0x02, 0, 0, 0, 0, 1}},
                      wire::kEtherTypeIpv4);
  wire::Ipv4Repr r;
  r.src = kPeer;
  r.dst = kUs;
  r.protocol = wire::kIpProtoEsp;
  r.payload_len = static_cast<uint16_t>(esp.size());
  wire::emit_ipv4(f.data() + 14, r);
  std::memcpy(f.data() + 34, esp.data(), esp.size());
  return f;
}

// Valid packets of both SAs: UDP to port 53 (transport) and an inner IPv4 UDP packet
// (tunnel), a few sequence numbers and sizes. Byte 0 of a seed selects the SA.
std::vector<ws::fuzz::Bytes> esp_seeds() {
  std::vector<ws::fuzz::Bytes> out;
  ipsec::CryptoEngine e;
  for (int i = 0; i < 2; ++i) {
    auto keys = ipsec::make_sa_keys(e, kCiphers[i], key(kCiphers[i]));
    for (uint32_t n : {0u, 1u, 13u, 200u}) {
      std::vector<uint8_t> inner(n + 8 + (i == 1 ? 20 : 0));
      uint8_t* udp = inner.data() + (i == 1 ? 20 : 0);
      if (i == 1) {
        wire::Ipv4Repr r;
        r.src = kPeer;
        r.dst = kUs;
        r.protocol = wire::kIpProtoUdp;
        r.payload_len = static_cast<uint16_t>(n + 8);
        wire::emit_ipv4(inner.data(), r);
      }
      wire::emit_udp(udp, 4000, 53, static_cast<uint16_t>(n));  // checksum 0: none (RFC 768)
      const auto len = static_cast<uint32_t>(inner.size());
      ws::fuzz::Bytes b(1 + ipsec::esp_len(kCiphers[i], len));
      b[0] = static_cast<uint8_t>(i);
      std::memcpy(b.data() + 1 + ipsec::esp_head_len(kCiphers[i]), inner.data(), len);
      ipsec::esp_seal(e, *keys, kSpis[i], ipsec::EspSeq(5 + n), i == 1,
                      i == 1 ? wire::kIpProtoIpv4 : wire::kIpProtoUdp, b.data() + 1, len);
      out.push_back(std::move(b));
    }
  }
  return out;
}

}  // namespace

WS_FUZZ_TARGET(esp, esp_seeds) {
  if (data.empty()) return;
  static Host h;  // one stack and crypto engine; its per-packet state is reset below
  for (int i = 0; i < 2; ++i) {
    ipsec::InboundSa& sa = *h.esp.inbound()[i];
    sa.replay = ipsec::ReplayWindow(sa.replay.size(), sa.esn);
    sa.counters = {};
  }
  h.delivered = 0;
  const uint64_t drops_before = h.stack.drops().total();
  auto f = frame(data.subspan(1));
  // Byte 0, bit 7: keep the SPI as given, or force it to the one the SA in bit 0 owns.
  if ((data[0] & 0x80) == 0 && f.size() >= 38) store_be32(f.data() + 34, kSpis[data[0] & 1]);
  RxMeta meta;
  h.stack.receive(std::span<const uint8_t>(f), meta, Instant::from_ns(1'000'000'000));
  h.stack.flush(Instant::from_ns(1'000'000'000));  // CBC packets are opened in a burst
  uint64_t authentic = 0;
  for (const auto& sa : h.esp.inbound()) authentic += sa->counters.packets;
  WS_FUZZ_CHECK(h.stack.drops().total() - drops_before + authentic >= 1);
  WS_FUZZ_CHECK(h.delivered <= authentic);
  // The transforms alone, on the same bytes, with the GCM SA's keys.
  std::vector<uint8_t> copy(data.begin() + 1, data.end());
  ipsec::Opened o;
  static auto keys = ipsec::make_sa_keys(h.esp.engine(), kCiphers[0], key(kCiphers[0]));
  if (ipsec::esp_open(h.esp.engine(), *keys, ipsec::EspSeq(1), false, copy.data(),
                      static_cast<uint32_t>(copy.size()), o) == ipsec::OpenError::none) {
    WS_FUZZ_CHECK(o.payload_off + o.payload_len <= copy.size());
  }
}
