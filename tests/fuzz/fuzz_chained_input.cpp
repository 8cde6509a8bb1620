// Differential target for in-place parsing of chained frames: one stack
// receives each frame in one buffer, a twin stack (same config, same inputs in
// the same order) receives it cut into pieces, and both must come to the same
// result: the same drops by reason, the same protocol counters, the same UDP
// payloads and the same TCP segment count. ASan/UBSan catch any read outside
// the pieces.
//
// Input: byte 0 picks the number of cuts (0..3), the next that many bytes place
// them (as a fraction of the frame), the rest is the Ethernet frame.
#include <algorithm>
#include <array>
#include <vector>

#include "stack/core/packet_view.hpp"
#include "stack/iface/stack.hpp"
#include "stack/iface/tcp_transport.hpp"
#include "stack/tcp/tcp_stack.hpp"
#include "tests/fuzz/null_io.hpp"
#include "tests/fuzz/seeds.hpp"

namespace {

using namespace ws;

using fuzz::NullIo;

// One stack as the captured frames' host 10.99.0.2, with UDP port 53 and TCP
// port 8080 open.
struct Host {
  NullIo io;
  Stack stack;
  DropCounters tcp_drops;
  tcp::TcpStack tcp{stack, tcp_drops, tcp::TcpConfig{}};
  tcp::TcpTransport transport{tcp};
  std::vector<std::vector<uint8_t>> udp_payloads;

  Host() {
    InterfaceConfig c;
    c.name = "fuzz0";
    c.mac = MacAddr{{0x42, 0xd5, 0x17, 0x56, 0x64, 0xe4}};
    c.address = Ipv4Cidr{Ipv4Addr::from_octets(10, 99, 0, 2), 24};
    c.mtu = 9000;
    stack.add_interface(c, io);
    stack.set_tcp(&transport);
    stack.udp_bind(53, [this](UdpSocket&, const UdpDatagram& d, Instant) {
      udp_payloads.emplace_back(d.payload.begin(), d.payload.end());
    });
    tcp::ListenCallbacks l;
    l.on_accept = [](tcp::Connection& conn) {
      tcp::ConnCallbacks cb;
      cb.on_data = [](tcp::Connection&, std::span<const uint8_t> d) { return d.size(); };
      conn.set_callbacks(std::move(cb));
      return true;
    };
    tcp.listen(8080, l);
  }
};

std::vector<ws::fuzz::Bytes> chained_seeds() {
  std::vector<ws::fuzz::Bytes> out;
  const std::array<std::array<uint8_t, 4>, 4> prefixes = {
      {{0, 0, 0, 0}, {1, 40, 0, 0}, {2, 50, 60, 0}, {3, 10, 70, 200}}};
  for (auto f : ws::fuzz::captured_frames()) {
    for (const auto& p : prefixes) {
      ws::fuzz::Bytes b(p.begin(), p.begin() + 1 + p[0]);
      b.insert(b.end(), f.begin(), f.end());
      out.push_back(std::move(b));
    }
  }
  return out;
}

}  // namespace

WS_FUZZ_TARGET(chained_input, chained_seeds) {
  static Host whole;
  static Host cut;
  if (data.empty()) return;
  const size_t ncuts = data[0] % 4;
  if (data.size() < 1 + ncuts) return;
  auto frame = data.subspan(1 + ncuts);
  std::array<size_t, 3> at{};
  for (size_t i = 0; i < ncuts; ++i) at[i] = data[1 + i] * frame.size() / 256;
  std::sort(at.begin(), at.begin() + static_cast<std::ptrdiff_t>(ncuts));
  std::array<PacketView::Segment, 4> segs;
  size_t from = 0;
  for (size_t i = 0; i < ncuts; ++i) {
    segs[i] = frame.subspan(from, at[i] - from);
    from = at[i];
  }
  segs[ncuts] = frame.subspan(from);

  const Instant now = Instant::from_ns(1'000'000'000);
  RxMeta meta;
  whole.stack.receive(frame, meta, now);
  cut.stack.receive(PacketView(std::span(segs.data(), ncuts + 1), frame.size()), meta, now);

  WS_FUZZ_CHECK(whole.stack.drops().count == cut.stack.drops().count);
  WS_FUZZ_CHECK(whole.tcp_drops.count == cut.tcp_drops.count);
  const auto& a = whole.stack.counters();
  const auto& b = cut.stack.counters();
  WS_FUZZ_CHECK(a.ipv4_in == b.ipv4_in && a.icmp_in == b.icmp_in && a.udp_in == b.udp_in &&
                a.tcp_in == b.tcp_in && a.tx_frames == b.tx_frames &&
                a.icmp_echo_replies_out == b.icmp_echo_replies_out &&
                a.icmp_errors_out == b.icmp_errors_out);
  WS_FUZZ_CHECK(a.rx_header_pullups == 0);
  WS_FUZZ_CHECK(whole.tcp.counters().segments_in == cut.tcp.counters().segments_in);
  WS_FUZZ_CHECK(whole.udp_payloads == cut.udp_payloads);
  // Bounded memory across a long run.
  if (whole.udp_payloads.size() > 64) {
    whole.udp_payloads.clear();
    cut.udp_payloads.clear();
  }
}
