// UDP clients: `source` sends message_size-byte datagrams (pattern payloads) at
// the configured rate or as fast as buffers allow; `ping` keeps one datagram in
// flight per "connection" and waits for the echo (a lost one times out).
#pragma once

#include <vector>

#include "stack/apps/client.hpp"
#include "stack/udp/udp_table.hpp"

namespace ws {

class UdpSourceService final : public ClientService {
 public:
  UdpSourceService(std::string name, ClientParams p, uint16_t local_port)
      : ClientService(std::move(name), p), local_port_(local_port) {}
  bool start(Stack& stack, Instant now) override;
  Instant poll(Instant now) override;
  void stop(Instant now) override;

 private:
  void fill(ClientReport& r) const override { (void)r; }
  bool drained(Instant now) const override {
    (void)now;
    return true;
  }
  Stack* stack_ = nullptr;
  UdpSocket* sock_ = nullptr;
  uint16_t local_port_;
  std::vector<uint8_t> buf_;
};

class UdpPingService final : public ClientService {
 public:
  UdpPingService(std::string name, ClientParams p, uint16_t local_port)
      : ClientService(std::move(name), p), local_port_(local_port) {}
  bool start(Stack& stack, Instant now) override;
  Instant poll(Instant now) override;
  void stop(Instant now) override;
  const LatencyHistogram* rtt() const override { return &hist_; }

 private:
  void send_next(Instant now);
  void fill(ClientReport& r) const override;
  bool drained(Instant now) const override {
    (void)now;
    return !in_flight_;
  }
  Stack* stack_ = nullptr;
  UdpSocket* sock_ = nullptr;
  uint16_t local_port_;
  std::vector<uint8_t> buf_;
  LatencyHistogram hist_;
  bool in_flight_ = false;
  uint64_t seq_ = 0;
  Instant sent_at_;
  static constexpr Duration kTimeout = Duration::seconds(1);
};

}  // namespace ws
