#include "stack/apps/tcp_services.hpp"

namespace ws {

namespace {
// Per-connection state, kept in Connection::user: the decoder counts messages
// as their bytes pass (nothing is buffered; a length above 4 GiB - 1 cannot be
// expressed, so the cap is the wire maximum).
struct ConnState {
  explicit ConnState(Framing f) : dec(FrameDecoderConfig{f, kMaxWireMessageBytes, false}) {}
  FrameDecoder dec;
  bool peer_closed = false;
};

void free_state(tcp::Connection& conn, tcp::CloseReason) {
  delete static_cast<ConnState*>(conn.user);
  conn.user = nullptr;
}

// Counts the messages completed in `bytes`; false on a framing error. FrameDecoder::scan
// skips the frames lying whole in `bytes` without an event per message (a sink of 8-byte
// messages sees thousands per call).
bool count_messages(ConnState& st, std::span<const uint8_t> bytes, uint64_t& messages) {
  if (st.dec.config().framing == Framing::kNone) return true;
  const FrameScan s = st.dec.scan(bytes, false);
  messages += s.messages;
  return !s.error;
}
}  // namespace

bool TcpEchoService::start(Stack& stack, Instant now) {
  (void)stack, (void)now;
  tcp::ListenCallbacks l;
  l.on_accept = [this](tcp::Connection& c) {
    ++counters_.connections;
    if (framing_ == Framing::kLength32) return accept_framed(c);  // tcp_echo.cpp
    c.user = new ConnState(framing_);
    tcp::ConnCallbacks cb;
    // RFC 862, framing none: send back what arrives. Only what the send buffer takes is
    // consumed; the rest stays in the receive buffer, closing the peer's window,
    // until on_writable resumes reading (end-to-end backpressure, no copies held).
    cb.on_data = [this](tcp::Connection& conn, std::span<const uint8_t> data) -> size_t {
      size_t n = conn.send(data);
      counters_.rx_bytes += n;
      counters_.tx_bytes += n;
      auto* st = static_cast<ConnState*>(conn.user);
      uint64_t before = counters_.rx_messages;
      count_messages(*st, data.first(n), counters_.rx_messages);
      counters_.tx_messages += counters_.rx_messages - before;
      // The FIN goes after the last byte: `data` may be only the part of the
      // receive buffer before its wrap point, so everything readable must be gone.
      if (st->peer_closed && n == data.size() && conn.readable() <= n) conn.shutdown_write();
      return n;
    };
    cb.on_writable = [](tcp::Connection& conn) { conn.resume_read(); };
    cb.on_peer_closed = [](tcp::Connection& conn) {
      auto* st = static_cast<ConnState*>(conn.user);
      st->peer_closed = true;
      if (conn.readable() == 0) conn.shutdown_write();
    };
    cb.on_closed = free_state;
    c.set_callbacks(std::move(cb));
    return true;
  };
  return listen(std::move(l));
}

bool TcpServerService::listen(tcp::ListenCallbacks l) {
  listening_ = tcp_.listen(port_, std::move(l));
  return listening_;
}

void TcpServerService::stop(Instant now) {
  (void)now;
  if (listening_) tcp_.unlisten(port_);
  listening_ = false;
}

bool TcpSinkService::start(Stack& stack, Instant now) {
  (void)stack, (void)now;
  tcp::ListenCallbacks l;
  l.on_accept = [this](tcp::Connection& c) {
    ++counters_.connections;
    c.user = new ConnState(framing_);
    tcp::ConnCallbacks cb;
    // RFC 863: discard everything, count it. A stream that breaks the framing is
    // reset: it cannot be resynchronised.
    cb.on_data = [this](tcp::Connection& conn, std::span<const uint8_t> data) -> size_t {
      counters_.rx_bytes += data.size();
      if (!count_messages(*static_cast<ConnState*>(conn.user), data, counters_.rx_messages)) {
        ++counters_.send_failures;
        conn.abort();
        return 0;
      }
      return data.size();
    };
    cb.on_peer_closed = [](tcp::Connection& conn) { conn.close(); };
    cb.on_closed = free_state;
    c.set_callbacks(std::move(cb));
    return true;
  };
  return listen(std::move(l));
}

}  // namespace ws
