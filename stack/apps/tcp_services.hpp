// TCP echo (RFC 862) and discard (RFC 863) servers on the stack's TCP API.
#pragma once

#include <cstdint>
#include <vector>

#include "stack/apps/service.hpp"
#include "stack/codec/framing.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws {

// What the TCP servers share: the listening port, the framing used to count
// messages, and unlisten on stop.
class TcpServerService : public Service {
 public:
  TcpServerService(std::string name, uint16_t port, tcp::TcpStack& tcp, Framing framing)
      : Service(std::move(name)), port_(port), tcp_(tcp), framing_(framing) {}
  void stop(Instant now) override;

 protected:
  bool listen(tcp::ListenCallbacks l);
  uint16_t port_;
  tcp::TcpStack& tcp_;
  Framing framing_;

 private:
  bool listening_ = false;
};

// With length32 framing every complete received frame goes back as one message through
// the connection's TX batch pipeline (docs/pipeline.md); with framing none it is a byte echo.
class TcpEchoService final : public TcpServerService {
 public:
  TcpEchoService(std::string name, uint16_t port, tcp::TcpStack& tcp,
                 Framing framing = Framing::kLength32, pipeline::PipelineParams pipeline = {})
      : TcpServerService(std::move(name), port, tcp, framing), pipeline_(pipeline) {}
  ~TcpEchoService() override;
  bool start(Stack& stack, Instant now) override;
  Instant poll(Instant now) override;
  void add_pipeline_counters(pipeline::PipelineCounters& into) const override;
  // Per-connection states allocated: live plus the free list (for churn tests).
  size_t conn_states() const { return live_.size() + free_.size() + closing_; }
  size_t free_conn_states() const { return free_.size(); }

  struct EchoConn;

 private:
  enum class Push : uint8_t { kPushed, kFull, kFailed };
  bool accept_framed(tcp::Connection& c);
  size_t echo_frames(EchoConn& st, tcp::Connection& conn, std::span<const uint8_t> data);
  Push push_frame(EchoConn& st, std::span<const uint8_t> payload, Instant now);
  // After a TX step: resumes reading, sends the FIN, and keeps the connection on the poll
  // list while it has a deadline. `unread` counts bytes of an on_data call in progress.
  void settle(EchoConn& st, tcp::Connection& conn, size_t unread);
  void closed(EchoConn* st);
  // Per-connection state comes from a free list (reset, its pipeline's spare batch kept):
  // under connection churn an accept allocates nothing. The list is trimmed towards the
  // live population, so what an overload left behind is freed once the load drops.
  EchoConn* take_conn();
  void recycle(EchoConn* st);

  pipeline::PipelineParams pipeline_;
  std::vector<EchoConn*> live_;     // open connections
  std::vector<EchoConn*> armed_;    // waiting for a pipeline deadline or to resume reading
  std::vector<EchoConn*> polling_;  // armed_ while poll() walks it (no allocation)
  std::vector<EchoConn*> free_;     // closed, reset, for the next accepted connection
  // The running totals of every state's pipeline (TxPipeline::set_totals).
  pipeline::PipelineCounters pipeline_totals_;
  size_t closing_ = 0;  // closed while armed: freed by the next poll()
};

class TcpSinkService final : public TcpServerService {
 public:
  TcpSinkService(std::string name, uint16_t port, tcp::TcpStack& tcp,
                 Framing framing = Framing::kLength32)
      : TcpServerService(std::move(name), port, tcp, framing) {}
  bool start(Stack& stack, Instant now) override;
};

}  // namespace ws
