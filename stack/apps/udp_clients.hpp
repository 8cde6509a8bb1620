// UDP clients: `source` sends message_size-byte datagrams (pattern payloads) at
// the configured rate or as fast as buffers allow; `ping` keeps one datagram in
// flight per "connection" and waits for the echo (a lost one times out).
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "stack/apps/client.hpp"
#include "stack/udp/udp_table.hpp"

namespace ws {

// What the UDP clients share: a socket bound to the local port for the replies, and a
// message_size-byte buffer that carries pattern message `seq` to the target.
class UdpClientService : public ClientService {
 public:
  void stop(Instant now) override;

 protected:
  UdpClientService(std::string name, ClientParams p, uint16_t local_port)
      : ClientService(std::move(name), p), local_port_(local_port) {}
  // Binds the socket (each reply counted, then given to on_reply) and starts the clock.
  bool bind(Stack& stack, Instant now);
  virtual void on_reply(const UdpDatagram& d, Instant now) {
    (void)d;
    (void)now;
  }
  // Sends pattern messages `first_seq`, `first_seq` + 1, ... (at most `n`, and at most 64,
  // fewer for large ones: the batch buffer stays under 256 KiB) in one burst, counted; returns how
  // many went. Fewer than asked is a send failure (out of buffers).
  size_t send_messages(uint64_t first_seq, size_t n, Instant now);
  bool send_message(uint64_t seq, Instant now) { return send_messages(seq, 1, now) == 1; }
  size_t message_size() const { return size_; }

  UdpSocket* sock_ = nullptr;

 private:
  Stack* stack_ = nullptr;
  uint16_t local_port_;
  size_t size_ = 0;
  std::vector<uint8_t> batch_;  // a burst's messages, back to back
  std::vector<std::span<const uint8_t>> views_;
};

class UdpSourceService final : public UdpClientService {
 public:
  UdpSourceService(std::string name, ClientParams p, uint16_t local_port)
      : UdpClientService(std::move(name), p, local_port) {}
  bool start(Stack& stack, Instant now) override;
  Instant poll(Instant now) override;

 private:
  void fill(ClientReport& r) const override { (void)r; }
  bool drained(Instant now) const override {
    (void)now;
    return true;
  }
};

class UdpPingService final : public UdpClientService {
 public:
  UdpPingService(std::string name, ClientParams p, uint16_t local_port)
      : UdpClientService(std::move(name), p, local_port) {}
  bool start(Stack& stack, Instant now) override;
  Instant poll(Instant now) override;
  const LatencyHistogram* rtt() const override { return &hist_; }

 private:
  void send_next(Instant now);
  void on_reply(const UdpDatagram& d, Instant now) override;
  void fill(ClientReport& r) const override { r.set_rtt(hist_); }
  bool drained(Instant now) const override {
    (void)now;
    return !in_flight_;
  }
  LatencyHistogram hist_;
  bool in_flight_ = false;
  uint64_t seq_ = 0;
  Instant sent_at_;
  static constexpr Duration kTimeout = Duration::seconds(1);
};

}  // namespace ws
