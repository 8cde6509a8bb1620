// Test applications for the simulator: a bulk sender/receiver that checks every byte.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>

#include "stack/codec/framing.hpp"
#include "tests/sim/sim.hpp"

namespace ws::sim {

struct Peer {
  tcp::Connection* c = nullptr;
  uint64_t tx_seed = 0, rx_seed = 0;
  uint64_t to_send = 0, sent = 0, received = 0, bad_bytes = 0;
  bool shutdown_when_done = true;
  bool connected = false, peer_closed = false, closed = false, consume = true;
  // Consume only about half of what each on_data offers (at least one byte), so
  // the stack keeps the rest buffered and offers it again.
  bool partial = false;
  tcp::CloseReason reason = tcp::CloseReason::kNormal;
  std::array<uint8_t, 65536> scratch{};

  void pump() {
    if (!c || closed) return;
    while (sent < to_send) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(scratch.size(), to_send - sent));
      for (size_t i = 0; i < n; ++i) scratch[i] = payload_byte(tx_seed, sent + i);
      size_t k = c->send(std::span<const uint8_t>(scratch.data(), n));
      sent += k;
      if (k < n) return;
    }
    if (shutdown_when_done && sent == to_send) {
      shutdown_when_done = false;
      c->shutdown_write();
    }
  }
  tcp::ConnCallbacks callbacks() {
    tcp::ConnCallbacks cb;
    cb.on_connected = [this](tcp::Connection&) {
      connected = true;
      pump();
    };
    cb.on_data = [this](tcp::Connection&, std::span<const uint8_t> d) -> size_t {
      if (!consume) return 0;
      if (partial && d.size() > 1) d = d.first((d.size() + 1) / 2);
      for (size_t i = 0; i < d.size(); ++i)
        if (d[i] != payload_byte(rx_seed, received + i)) ++bad_bytes;
      received += d.size();
      return d.size();
    };
    cb.on_peer_closed = [this](tcp::Connection& conn) {
      peer_closed = true;
      // A partial reader drains what it left behind before the stream ends
      // (each resume_read offers the rest again; it takes at least one byte).
      for (size_t left = conn.readable(); partial && left > 0 && !closed;) {
        conn.resume_read();
        if (closed || conn.readable() >= left) break;
        left = conn.readable();
      }
    };
    cb.on_writable = [this](tcp::Connection&) { pump(); };
    cb.on_closed = [this](tcp::Connection&, tcp::CloseReason r) {
      closed = true;
      reason = r;
      c = nullptr;
    };
    return cb;
  }
};

// A client on stack A talking to a server on stack B, port 5000.
struct Pair {
  Peer client, server;
  void start(Net& n, uint64_t a_to_b, uint64_t b_to_a, uint64_t seed) {
    client.tx_seed = server.rx_seed = seed * 2 + 1;
    server.tx_seed = client.rx_seed = seed * 2 + 2;
    client.to_send = a_to_b;
    server.to_send = b_to_a;
    tcp::ListenCallbacks l;
    l.on_accept = [this](tcp::Connection& c) {
      server.c = &c;
      server.connected = true;
      c.set_callbacks(server.callbacks());
      server.pump();
      return true;
    };
    n.b.listen(5000, l);
    client.c = n.a.connect({kAddrB, 5000}, client.callbacks(), 0, n.now);
  }
};

// Receives length32 streams on `port` and checks every payload byte of message k against
// pattern(k), and with `size` every message's length; `on_message` runs at each message end.
// `bad` counts wrong pieces, wrong lengths and framing errors.
struct FrameReceiver {
  FrameReceiver(tcp::TcpStack& tcp, uint16_t port, std::optional<uint32_t> size = std::nullopt,
                std::function<void()> on_message = {})
      : size_(size), on_message_(std::move(on_message)) {
    tcp::ListenCallbacks l;
    l.on_accept = [this](tcp::Connection& c) {
      tcp::ConnCallbacks cb;
      cb.on_data = [this](tcp::Connection&, std::span<const uint8_t> d) -> size_t {
        dec.feed(d, [this](const FrameEvent& ev) {
          if (ev.kind == FrameEventKind::kPayload) {
            if (check_pattern(ev.message, ev.offset, ev.data) != ev.data.size()) ++bad;
          } else if (ev.kind == FrameEventKind::kMessageComplete) {
            if (size_ && ev.length != *size_) ++bad;
            ++messages;
            if (on_message_) on_message_();
          } else if (ev.kind == FrameEventKind::kError) {
            ++bad;
          }
        });
        return d.size();
      };
      cb.on_peer_closed = [this](tcp::Connection& conn) {
        fin = true;
        conn.close();
      };
      c.set_callbacks(std::move(cb));
      return true;
    };
    listening = tcp.listen(port, std::move(l));
  }
  std::optional<uint32_t> size_;
  std::function<void()> on_message_;
  FrameDecoder dec{FrameDecoderConfig{Framing::kLength32, kMaxWireMessageBytes, false}};
  uint64_t messages = 0, bad = 0;
  bool fin = false;
  bool listening = false;
};

}  // namespace ws::sim
