#include "stack/apps/tcp_services.hpp"

namespace ws {

namespace {
// Per-connection state of the echo server, kept in Connection::user.
struct EchoConn {
  bool peer_closed = false;
};
}  // namespace

bool TcpEchoService::start(Stack& stack, Instant now) {
  (void)stack, (void)now;
  tcp::ListenCallbacks l;
  l.on_accept = [this](tcp::Connection& c) {
    ++counters_.connections;
    c.user = new EchoConn();
    tcp::ConnCallbacks cb;
    // RFC 862: send back what arrives. Only what the send buffer takes is
    // consumed; the rest stays in the receive buffer, closing the peer's window,
    // until on_writable resumes reading (end-to-end backpressure, no copies held).
    cb.on_data = [this](tcp::Connection& conn, std::span<const uint8_t> data) -> size_t {
      size_t n = conn.send(data);
      counters_.rx_bytes += n;
      counters_.tx_bytes += n;
      auto* st = static_cast<EchoConn*>(conn.user);
      if (st->peer_closed && n == data.size()) conn.shutdown_write();
      return n;
    };
    cb.on_writable = [](tcp::Connection& conn) { conn.resume_read(); };
    cb.on_peer_closed = [](tcp::Connection& conn) {
      auto* st = static_cast<EchoConn*>(conn.user);
      st->peer_closed = true;
      if (conn.readable() == 0) conn.shutdown_write();
    };
    cb.on_closed = [](tcp::Connection& conn, tcp::CloseReason) {
      delete static_cast<EchoConn*>(conn.user);
      conn.user = nullptr;
    };
    c.set_callbacks(std::move(cb));
    return true;
  };
  listening_ = tcp_.listen(port_, std::move(l));
  return listening_;
}

void TcpEchoService::stop(Instant now) {
  (void)now;
  if (listening_) tcp_.unlisten(port_);
  listening_ = false;
}

bool TcpSinkService::start(Stack& stack, Instant now) {
  (void)stack, (void)now;
  tcp::ListenCallbacks l;
  l.on_accept = [this](tcp::Connection& c) {
    ++counters_.connections;
    tcp::ConnCallbacks cb;
    // RFC 863: discard everything, count it.
    cb.on_data = [this](tcp::Connection&, std::span<const uint8_t> data) -> size_t {
      counters_.rx_bytes += data.size();
      return data.size();
    };
    cb.on_peer_closed = [](tcp::Connection& conn) { conn.close(); };
    c.set_callbacks(std::move(cb));
    return true;
  };
  listening_ = tcp_.listen(port_, std::move(l));
  return listening_;
}

void TcpSinkService::stop(Instant now) {
  (void)now;
  if (listening_) tcp_.unlisten(port_);
  listening_ = false;
}

}  // namespace ws
