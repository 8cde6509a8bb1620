// TCP clients: `source` (sends framed pattern messages as fast as allowed) and
// `ping` (one message in flight per connection, waits for the echo; optionally a
// new connection per round trip).
#pragma once

#include <memory>
#include <vector>

#include "stack/apps/client.hpp"
#include "stack/apps/pipelined_tx.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws {

// What both TCP clients keep per connection: the connection, whether its handshake
// completed, its batch pipeline (length32 framing) and, with framing none, the bytes
// produced but not yet accepted by send().
struct TcpClientConn {
  virtual ~TcpClientConn() = default;
  tcp::Connection* c = nullptr;
  bool connected = false;
  std::unique_ptr<PipelinedTx> tx;
  std::vector<uint8_t> pending;
  size_t pending_off = 0;
};

// What the TCP clients share: their connections and the callbacks each gets, the byte
// stream of framing none (scratch buffer, bytes send() did not take), and the pipelines'
// counters. Each client adds what it sends and what it makes of the replies.
class TcpClientService : public ClientService {
 public:
  ~TcpClientService() override;
  void stop(Instant now) override;
  void add_pipeline_counters(pipeline::PipelineCounters& into) const override;

 protected:
  TcpClientService(std::string name, ClientParams p, tcp::TcpStack& tcp);
  bool drained(Instant now) const override;
  // Sends what is moving along on `st`: its pipeline or its byte stream.
  virtual void pump(TcpClientConn& st) = 0;
  // Connected (counted), writable and peer-closed callbacks, each pumping `st`; the client
  // adds on_data and on_closed.
  tcp::ConnCallbacks callbacks(TcpClientConn& st);
  // Sends `st`'s pending bytes; false while some are left (on_writable resumes).
  bool send_pending(TcpClientConn& st);
  // Room in the send buffer for produced bytes; 0 when full, and then on_writable is armed.
  size_t send_space(TcpClientConn& st);
  // Sends scratch_[0, n) and keeps what send() does not take; false when some was kept.
  bool send_scratch(TcpClientConn& st, size_t n);
  // A message beyond max_batches x batch: a configuration the run cannot serve. Counted,
  // and the run stops; true when `r` says so.
  bool refused_too_large(const pipeline::BulkPushResult& r, Instant now);
  // Counts `st`'s pipeline (if any) into pipeline_totals_: call when one is made.
  void count_pipeline(TcpClientConn& st);

  tcp::TcpStack& tcp_;
  // The running totals of every connection's pipeline (TxPipeline::set_totals): before
  // conns_, whose pipelines count into it until they are destroyed.
  pipeline::PipelineCounters pipeline_totals_;
  std::vector<std::unique_ptr<TcpClientConn>> conns_;
  std::vector<uint8_t> scratch_;
};

class TcpSourceService final : public TcpClientService {
 public:
  TcpSourceService(std::string name, ClientParams p, tcp::TcpStack& tcp)
      : TcpClientService(std::move(name), p, tcp) {}
  bool start(Stack& stack, Instant now) override;
  Instant poll(Instant now) override;

 private:
  struct Conn;
  static Conn& as(TcpClientConn& c);
  void open(Instant now);
  // Opens connections up to `connections`, as many as max_connecting allows now.
  void open_more(Instant now);
  void pump(TcpClientConn& st) override;
  void pump_messages(Conn& c);
  void pump_stream(Conn& c);
  // Messages the count and rate limits still allow to start, over all connections.
  uint64_t budget(Instant now) const;
  void fill(ClientReport& r) const override { (void)r; }

  uint64_t started_ = 0;  // messages handed to connections (may be partial)
};

class TcpPingService final : public TcpClientService {
 public:
  TcpPingService(std::string name, ClientParams p, tcp::TcpStack& tcp)
      : TcpClientService(std::move(name), p, tcp) {}
  bool start(Stack& stack, Instant now) override;
  Instant poll(Instant now) override;
  const LatencyHistogram* rtt() const override { return &hist_; }

 private:
  struct Conn;
  static Conn& as(TcpClientConn& c);
  bool open(Instant now, Conn& c);
  void pump(TcpClientConn& st) override;
  void pump_message(Conn& c);
  void pump_stream(Conn& c);
  void on_bytes(Conn& c, std::span<const uint8_t> data);
  Instant walk(Instant now, uint64_t& room);
  // Reconnect mode: the slots whose connection closed since, opened again within `room`.
  void reopen(Instant now, uint64_t& room);
  void fill(ClientReport& r) const override { r.set_rtt(hist_); }

  LatencyHistogram hist_;
  uint64_t round_trips_started_ = 0;
  size_t opened_slots_ = 0;    // conns_[0, this) have been opened at least once
  Instant walk_at_;            // next walk over every connection (poll)
  bool walk_soon_ = false;     // a pump left work for the next poll (pump_message)
  std::vector<Conn*> closed_;  // reconnect: slots to open again (each once; sized at start)
};

}  // namespace ws
