// One TCP connection's transmit side on the batch pipeline (docs/pipeline.md, "Services on
// the pipeline"): a service pushes whole messages into the TxPipeline, and step() is the TX
// step that moves what the pipeline releases into Connection::send.
#pragma once

#include <cstddef>
#include <span>

#include "stack/core/time.hpp"
#include "stack/pipeline/tx_pipeline.hpp"
#include "stack/tcp/api.hpp"

namespace ws {

class PipelinedTx {
 public:
  explicit PipelinedTx(const pipeline::PipelineParams& p) : pl_(p) {}

  pipeline::TxPipeline& pipeline() { return pl_; }
  const pipeline::TxPipeline& pipeline() const { return pl_; }

  // The TX step. The MSS is read on every step because it changes after the handshake and
  // with the path MTU (RFC 1191); in flight is what TCP holds unacknowledged, so the
  // pipeline enters batching mode when more than one batch is queued downstream. Returns
  // the stream bytes TCP accepted.
  size_t step(tcp::Connection& c, Instant now) {
    pl_.set_mss(c.send_mss());
    pl_.set_in_flight(c.send_queued());
    if (pl_.queued_bytes() == 0 || pl_.poll(now) > now) return 0;
    bool short_send = false;
    const size_t n = pl_.drain(now, [&](std::span<const uint8_t> s) {
      const size_t k = c.send(s);
      short_send = k < s.size();
      return k;
    });
    // A short send arms on_writable (api.hpp); until it fires, pulling again is pointless.
    blocked_ = short_send;
    return n;
  }
  // on_writable: TCP has room again.
  void writable() { blocked_ = false; }
  bool blocked() const { return blocked_; }

  // When the service should run step() next: the pipeline's deadline, except while TCP is
  // full (a pull would take nothing and the deadline stays in the past: on_writable resumes
  // instead of a spinning poll).
  Instant deadline(Instant now) const { return blocked_ ? Instant::never() : pl_.poll(now); }

 private:
  pipeline::TxPipeline pl_;
  bool blocked_ = false;
};

}  // namespace ws
