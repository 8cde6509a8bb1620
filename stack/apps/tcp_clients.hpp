// TCP clients: `source` (sends framed pattern messages as fast as allowed) and
// `ping` (one message in flight per connection, waits for the echo; optionally a
// new connection per round trip).
#pragma once

#include <memory>
#include <vector>

#include "stack/apps/client.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws {

class TcpSourceService final : public ClientService {
 public:
  TcpSourceService(std::string name, ClientParams p, tcp::TcpStack& tcp);
  ~TcpSourceService() override;
  bool start(Stack& stack, Instant now) override;
  Instant poll(Instant now) override;
  void stop(Instant now) override;
  void add_pipeline_counters(pipeline::PipelineCounters& into) const override;

 private:
  struct Conn;
  void open(Instant now);
  void pump(Conn& c);
  void pump_messages(Conn& c);
  void pump_stream(Conn& c);
  // Messages the count and rate limits still allow to start, over all connections.
  uint64_t budget(Instant now) const;
  void fill(ClientReport& r) const override;
  bool drained(Instant now) const override;

  tcp::TcpStack& tcp_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<uint8_t> scratch_;
  uint64_t started_ = 0;                        // messages handed to connections (may be partial)
  pipeline::PipelineCounters closed_pipeline_;  // of connections already closed
};

class TcpPingService final : public ClientService {
 public:
  TcpPingService(std::string name, ClientParams p, tcp::TcpStack& tcp);
  ~TcpPingService() override;
  bool start(Stack& stack, Instant now) override;
  Instant poll(Instant now) override;
  void stop(Instant now) override;
  const LatencyHistogram* rtt() const override { return &hist_; }
  void add_pipeline_counters(pipeline::PipelineCounters& into) const override;

 private:
  struct Conn;
  bool open(Instant now, Conn& c);
  void pump(Conn& c);
  void pump_message(Conn& c);
  void pump_stream(Conn& c);
  void on_bytes(Conn& c, std::span<const uint8_t> data);
  void fill(ClientReport& r) const override;
  bool drained(Instant now) const override;

  tcp::TcpStack& tcp_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<uint8_t> scratch_;
  LatencyHistogram hist_;
  uint64_t round_trips_started_ = 0;
  pipeline::PipelineCounters closed_pipeline_;  // of connections already closed
};

}  // namespace ws
