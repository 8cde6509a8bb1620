// TCP echo with length32 framing on the TX batch pipeline (docs/pipeline.md
// "Services on the pipeline"). Every complete received frame is pushed back whole as one
// message (a run of whole frames in one push_frames), so the pipeline packs replies into
// MSS-multiple batches and a message is never half sent. Reading stops while the pipeline holds
// more than a few batches: what is not consumed stays in TCP's receive buffer and closes the peer's
// window (end-to-end backpressure, as the byte echo does).
#include <algorithm>
#include <cstring>

#include "stack/apps/pipelined_tx.hpp"
#include "stack/apps/tcp_services.hpp"
#include "stack/core/bytes.hpp"

namespace ws {

struct TcpEchoService::EchoConn {
  explicit EchoConn(const pipeline::PipelineParams& p) : tx(p) {}
  // As new, for the next connection; storage kept (the pipeline's spare batch, and the
  // frame accumulator unless a large message grew it).
  void reset() {
    tx.reset();
    conn = nullptr;
    have = 0;
    need = 0;
    acc.clear();
    if (acc.capacity() > kKeepAccBytes) std::vector<uint8_t>().swap(acc);
    ready = paused = peer_closed = fin_sent = armed = closed = false;
    live_index = 0;
  }
  static constexpr size_t kKeepAccBytes = size_t{64} * 1024;
  PipelinedTx tx;
  tcp::Connection* conn = nullptr;
  // A frame that arrives in pieces is collected here; a whole frame inside one on_data
  // span is pushed straight from the receive buffer.
  uint8_t header[kFrameHeaderBytes] = {};
  uint8_t have = 0;          // header bytes collected
  uint32_t need = 0;         // payload length, once the header is complete
  std::vector<uint8_t> acc;  // payload collected (grows to the largest message, then reused)
  bool ready = false;        // acc is a whole payload the pipeline has not accepted yet
  bool paused = false;       // on_data stopped short; resume_read once the pipeline drains
  bool peer_closed = false;
  bool fin_sent = false;
  bool armed = false;   // on armed_
  bool closed = false;  // on_closed ran while armed: poll() frees it
  size_t live_index = 0;
};

namespace {
// Stream bytes the pipeline may hold before the echo stops reading: a few batches, so
// replies are packed into full batches but memory stays bounded per connection.
uint64_t high_water(const pipeline::TxPipeline& pl) { return 4 * uint64_t{pl.batch_limit()}; }

// A frame the pipeline can never accept (more batches than max_batches) is a protocol error
// for this service: refused before its payload is collected.
bool fits(const pipeline::TxPipeline& pl, uint64_t payload) {
  const uint64_t limit = pl.batch_limit();
  return (kFrameHeaderBytes + payload + limit - 1) / limit <= pl.params().max_batches;
}
}  // namespace

namespace {
// Free states kept beyond the live population: enough for the turnover between polls.
constexpr size_t kSpareConns = 64;
}  // namespace

TcpEchoService::~TcpEchoService() {
  for (EchoConn* st : armed_) {
    if (st->closed) delete st;
  }
  for (EchoConn* st : live_) {
    if (st->conn != nullptr) st->conn->user = nullptr;
    delete st;
  }
  for (EchoConn* st : free_) delete st;
}

TcpEchoService::EchoConn* TcpEchoService::take_conn() {
  // One extra free state is given back per accept while the list is above the bound: an
  // overload's states return to malloc within a few thousand connections of normal load.
  if (free_.size() > live_.size() + kSpareConns) {
    delete free_.back();
    free_.pop_back();
  }
  if (free_.empty()) {
    auto* st = new EchoConn(pipeline_);
    st->tx.pipeline().set_totals(&pipeline_totals_);
    return st;
  }
  EchoConn* st = free_.back();
  free_.pop_back();
  return st;
}

void TcpEchoService::recycle(EchoConn* st) {
  st->reset();
  free_.push_back(st);
}

bool TcpEchoService::accept_framed(tcp::Connection& c) {
  EchoConn* st = take_conn();
  st->conn = &c;
  st->live_index = live_.size();
  live_.push_back(st);
  c.user = st;
  tcp::ConnCallbacks cb;
  cb.on_data = [this](tcp::Connection& conn, std::span<const uint8_t> data) -> size_t {
    return echo_frames(*static_cast<EchoConn*>(conn.user), conn, data);
  };
  cb.on_writable = [this](tcp::Connection& conn) {
    auto& s = *static_cast<EchoConn*>(conn.user);
    s.tx.writable();
    counters_.tx_bytes += s.tx.step(conn, tcp_.last_now());
    settle(s, conn, conn.readable());
    if (s.paused && !s.tx.blocked() &&
        s.tx.pipeline().queued_bytes() < high_water(s.tx.pipeline())) {
      s.paused = false;
      conn.resume_read();  // on_data runs again; nothing of `s` is used after this
    }
  };
  cb.on_peer_closed = [this](tcp::Connection& conn) {
    auto& s = *static_cast<EchoConn*>(conn.user);
    s.peer_closed = true;
    settle(s, conn, conn.readable());
  };
  cb.on_closed = [this](tcp::Connection& conn, tcp::CloseReason) {
    auto* s = static_cast<EchoConn*>(conn.user);
    conn.user = nullptr;
    if (s != nullptr) closed(s);
  };
  c.set_callbacks(std::move(cb));
  return true;
}

TcpEchoService::Push TcpEchoService::push_frame(EchoConn& st, std::span<const uint8_t> payload,
                                                Instant now) {
  const pipeline::PushResult r = st.tx.pipeline().push(payload, pipeline::Priority::kData, now);
  if (r.status == pipeline::PushStatus::kBackpressure) return Push::kFull;
  if (r.status == pipeline::PushStatus::kTooLarge) return Push::kFailed;
  ++counters_.rx_messages;
  ++counters_.tx_messages;
  return Push::kPushed;
}

namespace {

// The bytes of the run of whole frames at the front of `rest`: up to the high-water mark,
// plus the frame that crosses it.
size_t whole_frames(const pipeline::TxPipeline& pl, std::span<const uint8_t> rest) {
  const uint64_t room = high_water(pl) - pl.queued_bytes();
  size_t run = 0;
  while (rest.size() - run >= kFrameHeaderBytes && run < room) {
    const uint64_t f = kFrameHeaderBytes + uint64_t{load_be32(rest.data() + run)};
    if (f > rest.size() - run || !fits(pl, f - kFrameHeaderBytes)) break;
    run += f;
  }
  return run;
}

}  // namespace

size_t TcpEchoService::echo_frames(EchoConn& st, tcp::Connection& conn,
                                   std::span<const uint8_t> data) {
  const Instant now = tcp_.last_now();
  pipeline::TxPipeline& pl = st.tx.pipeline();
  st.tx.sync(conn);    // the batch size behind high_water() and fits(), and push_frame
  bool synced = true;  // TCP has taken nothing since: push_frames needs no other sync
  size_t used = 0;
  bool failed = false;
  for (;;) {
    if (pl.queued_bytes() >= high_water(pl)) {
      synced = false;
      counters_.tx_bytes += st.tx.step(conn, now);
      if (pl.queued_bytes() >= high_water(pl)) break;  // TCP is full or batching holds
    }
    if (st.ready) {
      const Push r = push_frame(st, {st.acc.data(), st.acc.size()}, now);
      if (r != Push::kPushed) {
        failed = r == Push::kFailed;
        break;
      }
      st.ready = false;
      st.have = 0;
      st.acc.clear();
      continue;
    }
    if (used == data.size()) break;
    const std::span<const uint8_t> rest = data.subspan(used);
    if (st.have == 0 && rest.size() >= kFrameHeaderBytes) {
      // Whole frames go back with one push, straight from TCP's receive buffer: they are
      // already framed, byte for byte the reply. While the link keeps up they are copied
      // straight into the send ring (push_frames_direct), otherwise into a batch.
      if (!synced) st.tx.sync(conn);
      const size_t run = whole_frames(pl, rest);
      if (run > 0) {
        synced = false;
        size_t sent = 0;
        const pipeline::BulkPushResult r = st.tx.push_frames(conn, rest.first(run), now, sent);
        counters_.tx_bytes += sent;
        counters_.rx_messages += r.accepted;
        counters_.tx_messages += r.accepted;
        used += r.stream_bytes;
        if (r.status != pipeline::PushStatus::kOk) {
          failed = r.status == pipeline::PushStatus::kTooLarge;
          break;
        }
        continue;
      }
    }
    if (st.have < kFrameHeaderBytes) {
      const size_t k = std::min<size_t>(kFrameHeaderBytes - st.have, rest.size());
      std::memcpy(st.header + st.have, rest.data(), k);
      st.have = static_cast<uint8_t>(st.have + k);
      used += k;
      if (st.have < kFrameHeaderBytes) continue;
      st.need = load_be32(st.header);
      if (!fits(pl, st.need)) {
        failed = true;
        break;
      }
      st.ready = st.need == 0;
      continue;
    }
    const size_t k = std::min<size_t>(st.need - st.acc.size(), rest.size());
    st.acc.insert(st.acc.end(), rest.begin(), rest.begin() + static_cast<ptrdiff_t>(k));
    used += k;
    st.ready = st.acc.size() == st.need;
  }
  counters_.rx_bytes += used;
  if (failed) {
    // A length this echo can never send back: the stream cannot be resynchronised.
    ++counters_.send_failures;
    conn.abort();  // frees `st` (on_closed)
    return 0;
  }
  counters_.tx_bytes += st.tx.step(conn, now);
  st.paused = used < data.size() || st.ready;
  settle(st, conn, conn.readable() - used);
  return used;
}

// Inline: after every reply (echo_frames), where the call cost about 20 instructions a round
// trip (tests/bench/echo_cost).
[[gnu::always_inline]] inline void TcpEchoService::settle(EchoConn& st, tcp::Connection& conn,
                                                          size_t unread) {
  const pipeline::TxPipeline& pl = st.tx.pipeline();
  // RFC 9293 3.6: the FIN follows the last reply. A frame the peer left unfinished can
  // never be echoed whole, so it is not waited for.
  if (st.peer_closed && !st.fin_sent && unread == 0 && !st.ready && pl.queued_bytes() == 0) {
    st.fin_sent = true;
    conn.shutdown_write();
  }
  const Instant now = tcp_.last_now();
  const bool want = !st.tx.deadline(now).is_never() || (st.paused && !st.tx.blocked());
  if (want && !st.armed) {
    st.armed = true;
    armed_.push_back(&st);
  }
}

Instant TcpEchoService::poll(Instant now) {
  if (armed_.empty()) return Instant::never();
  polling_.swap(armed_);
  for (EchoConn* st : polling_) {
    st->armed = false;
    if (st->closed) {
      --closing_;
      recycle(st);
      continue;
    }
    tcp::Connection& conn = *st->conn;
    counters_.tx_bytes += st->tx.step(conn, now);
    settle(*st, conn, conn.readable());
    if (st->paused && !st->tx.blocked() &&
        st->tx.pipeline().queued_bytes() < high_water(st->tx.pipeline())) {
      st->paused = false;
      conn.resume_read();  // may close the connection: `st` is not used after this
    }
  }
  polling_.clear();
  Instant next = Instant::never();
  for (const EchoConn* st : armed_) {
    // A connection waiting only to resume reading is served on the next poll.
    const Instant d = st->tx.deadline(now);
    next = earliest(next, d.is_never() ? now : d);
  }
  return next;
}

void TcpEchoService::closed(EchoConn* st) {
  EchoConn* last = live_.back();
  live_[st->live_index] = last;
  last->live_index = st->live_index;
  live_.pop_back();
  st->conn = nullptr;
  if (st->armed) {
    st->closed = true;
    ++closing_;
  } else {
    recycle(st);
  }
}

void TcpEchoService::add_pipeline_counters(pipeline::PipelineCounters& into) const {
  pipeline::accumulate(into, pipeline_totals_, true);
}

}  // namespace ws
