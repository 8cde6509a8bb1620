// The HTTP/1.1 load generator (`kind: http` with a `target`): `connections` connections,
// each sending GET `path` and waiting for the whole response before the next request
// (one request in flight per connection), `requests_per_connection` requests per
// connection (0: keep-alive until the run ends), then a new connection. Every response is
// checked: status line, a Content-Length, the body's length and, optionally, its bytes
// against the generated body of the `http` service. `rate` paces requests (with one
// request per connection: connections) on a fixed schedule.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stack/apps/client.hpp"
#include "stack/apps/http_text.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws {

struct HttpClientParams {
  std::string path = "/";
  uint32_t requests_per_connection = 0;  // 0: as many as the run allows
  uint16_t expect_status = 200;
  std::optional<uint64_t> expect_body_bytes;  // Content-Length must equal it
  bool check_body = false;                    // bodies are the generated body
};

class HttpClientService final : public ClientService {
 public:
  HttpClientService(std::string name, ClientParams p, HttpClientParams h, tcp::TcpStack& tcp);
  ~HttpClientService() override;
  bool start(Stack& stack, Instant now) override;
  Instant poll(Instant now) override;
  void stop(Instant now) override;
  const LatencyHistogram* rtt() const override { return &hist_; }

  // The largest response header block accepted.
  static constexpr size_t kMaxHead = 8192;
  // What a response's header block says (RFC 9112 4, 6.3).
  struct Head {
    uint16_t status = 0;
    bool has_length = false;
    bool close = false;  // "Connection: close"
    uint64_t length = 0;
  };

 private:
  struct Conn;
  bool open(Instant now, Conn& st);
  // Sends the next request when this connection may: limits, rate, requests per connection.
  void next_request(Conn& st);
  void send_request(Conn& st);
  void on_bytes(Conn& st, std::span<const uint8_t> data);
  // A usable response's header block, parsed: its checks, then its body.
  void on_head(Conn& st, const Head& h);
  void on_body(Conn& st, std::span<const uint8_t> data);
  void complete(Conn& st);
  void fail(Conn& st);
  // One more request the count and rate limits allow by `now` (reserved when true).
  bool reserve(Instant now);
  bool may_reserve(Instant now) const;
  void fill(ClientReport& r) const override;
  bool drained(Instant now) const override;
  // poll()'s parts: each walks only the slots that wait for it, not every slot (a run of
  // 1024 slots walked them all at every receive burst, and at every loop iteration once
  // behind its schedule, which took the client's core from its packets).
  void retry_sends();
  void send_deferred(Instant now);
  void open_free(Instant now, bool& reopen, bool& waiting);
  void close_idle();

  // A FIFO of slot indices, each slot in it at most once (the caller's flag), with room
  // for every slot: no allocation after start().
  class SlotQueue {
   public:
    void reset(size_t slots) {
      q_.assign(slots, 0);
      head_ = n_ = 0;
    }
    void push(uint32_t slot) { q_[(head_ + n_++) % q_.size()] = slot; }
    uint32_t pop() {
      const uint32_t s = q_[head_];
      head_ = (head_ + 1) % q_.size();
      --n_;
      return s;
    }
    size_t size() const { return n_; }

   private:
    std::vector<uint32_t> q_;
    size_t head_ = 0, n_ = 0;
  };

  HttpClientParams h_;
  tcp::TcpStack& tcp_;
  std::string request_keep_;   // the request with no Connection field (HTTP/1.1 persists)
  std::string request_close_;  // the last request of a connection: "Connection: close"
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<uint32_t> free_;       // slots with no connection (Conn::listed_free)
  SlotQueue deferred_;               // connected, their next request waiting on the rate
  SlotQueue sending_;                // a request only partly handed to TCP (on_writable's net)
  http::LastBlock<Head> last_head_;  // the last usable response header block, parsed
  LatencyHistogram hist_;
  uint64_t started_ = 0;  // requests reserved (sent, or a connection opened for one)
};

}  // namespace ws
