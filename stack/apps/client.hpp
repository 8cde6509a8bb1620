// Common machinery of client services (source, ping): limits (duration, count,
// rate), a report each second and a final one.
#pragma once

#include <cstdint>

#include "stack/apps/service.hpp"
#include "stack/codec/framing.hpp"
#include "stack/core/addr.hpp"
#include "stack/pipeline/tx_pipeline.hpp"
#include "stack/tcp/api.hpp"

namespace ws {

struct ClientParams {
  Endpoint target;
  uint32_t message_size = 1024;
  uint32_t connections = 1;
  Duration duration = Duration::seconds(10);  // zero: no time limit
  uint64_t rate = 0;                          // messages/s over all connections; 0: flat out
  uint64_t count = 0;                         // messages (source) or round trips (ping); 0: none
  bool reconnect = false;                     // ping: a new connection per round trip
  // TCP: connections of the core in their handshake (SYN-SENT) beyond which this client
  // opens no more until some complete: a burst of SYNs larger than the port's transmit
  // backlog or the ARP queue would be dropped and retried only after the SYN timeout.
  uint32_t max_connecting = 256;
  Framing framing = Framing::kLength32;
  // After the limits are reached: how long to wait for connections to close.
  Duration linger = Duration::seconds(5);
  // TCP with length32 framing: one TX batch pipeline per connection (docs/pipeline.md).
  pipeline::PipelineParams pipeline;
};

class ClientService : public Service {
 public:
  ClientService(std::string name, ClientParams p) : Service(std::move(name)), p_(p) {}
  bool report(Instant now, ClientReport& out) override;
  bool is_client() const override { return true; }
  bool finished() const override { return final_sent_; }

 protected:
  // Called by start() of the derived class.
  void begin(Instant now);
  // True once duration or count is reached (sending stops).
  bool limits_reached(Instant now) const;
  // Messages the rate limit allows to have been started by `now` in total.
  uint64_t rate_allowance(Instant now) const;
  // Connections the client may open now on its core's TCP stack (max_connecting,
  // against the core's connections in SYN-SENT). Until the core's first handshake
  // completes, one at a time: that SYN resolves the next hop's MAC, and ARP holds only
  // a few frames per neighbour meanwhile (the rest of a burst would be dropped). None
  // while the source address is tentative: a connect would fail for want of one.
  template <class Tcp>
  uint64_t open_room(const Tcp& stack) const {
    if (stack.source_pending(p_.target.addr)) return 0;
    const uint64_t syn_sent = stack.count_in(tcp::TcpState::kSynSent);
    const uint64_t most = stack.established_total() == 0 ? 1 : p_.max_connecting;
    return syn_sent >= most ? 0 : most - syn_sent;
  }
  // Derived classes fill what they know; the base adds rates and timing.
  virtual void fill(ClientReport& r) const = 0;
  // All connections closed (or linger expired) after the limits: final report due.
  virtual bool drained(Instant now) const = 0;
  // A connection completed its handshake.
  void note_connected() {
    ++opened_;
    ++counters_.connections;
  }
  void mark_stopping(Instant now) {
    if (!stopping_) stop_at_ = now;
    stopping_ = true;
  }

  ClientParams p_;
  Instant start_;
  bool stopping_ = false;
  Instant stop_at_;
  uint64_t messages_ = 0;  // completed messages / round trips
  uint64_t bytes_ = 0;     // payload bytes
  uint64_t opened_ = 0;
  uint64_t connect_failures_ = 0;
  uint64_t errors_ = 0;

 private:
  Instant next_report_;
  Instant last_report_;
  uint64_t last_messages_ = 0;
  uint64_t last_bytes_ = 0;
  uint64_t last_opened_ = 0;
  bool final_sent_ = false;
};

}  // namespace ws
