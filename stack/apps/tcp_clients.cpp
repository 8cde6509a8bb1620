#include "stack/apps/tcp_clients.hpp"

#include <algorithm>

#include "stack/apps/pipelined_tx.hpp"

namespace ws {

namespace {
constexpr size_t kScratch = size_t{64} * 1024;
// While connections wait to be opened (max_connecting): how soon to look again. A
// handshake over a LAN or memif takes tens of microseconds to a millisecond.
constexpr Duration kOpenRetry = Duration::micros(200);
// Message `msg`'s pattern payload from `off` on (what the sink and the echo verify), for
// PipelinedTx's writers.
constexpr auto kPatternFill = [](uint64_t msg, uint64_t off, std::span<uint8_t> out) {
  fill_pattern(msg, off, out);
};
}  // namespace

// ---------------------------------------------------------------- shared

TcpClientService::TcpClientService(std::string name, ClientParams p, tcp::TcpStack& tcp)
    : ClientService(std::move(name), p),
      tcp_(tcp),
      scratch_(std::max<size_t>(kScratch, p.message_size)) {}

TcpClientService::~TcpClientService() {
  for (auto& c : conns_) {
    if (c->c != nullptr) c->c->user = nullptr;
  }
}

tcp::ConnCallbacks TcpClientService::callbacks(TcpClientConn& st) {
  TcpClientConn* s = &st;
  tcp::ConnCallbacks cb;
  cb.on_connected = [this, s](tcp::Connection&) {
    s->connected = true;
    note_connected();
    pump(*s);
  };
  cb.on_writable = [this, s](tcp::Connection&) {
    if (s->tx) s->tx->writable();
    pump(*s);
  };
  cb.on_peer_closed = [](tcp::Connection& c) { c.close(); };
  return cb;
}

bool TcpClientService::send_pending(TcpClientConn& st) {
  if (st.pending_off < st.pending.size()) {
    size_t n = st.c->send({st.pending.data() + st.pending_off, st.pending.size() - st.pending_off});
    st.pending_off += n;
    counters_.tx_bytes += n;
    if (st.pending_off < st.pending.size()) return false;
    st.pending.clear();
    st.pending_off = 0;
  }
  return true;
}

size_t TcpClientService::send_space(TcpClientConn& st) {
  const size_t space = st.c->send_space();
  if (space == 0) {
    // A refused send arms on_writable (api.hpp): offer one byte, which is not
    // taken while the buffer is full, rather than wait for the next poll.
    (void)st.c->send({scratch_.data(), 1});
  }
  return std::min(space, scratch_.size());
}

bool TcpClientService::send_scratch(TcpClientConn& st, size_t n) {
  size_t sent = st.c->send({scratch_.data(), n});
  counters_.tx_bytes += sent;
  if (sent == n) return true;
  st.pending.assign(scratch_.begin() + static_cast<ptrdiff_t>(sent),
                    scratch_.begin() + static_cast<ptrdiff_t>(n));
  st.pending_off = 0;
  return false;
}

bool TcpClientService::refused_too_large(const pipeline::BulkPushResult& r, Instant now) {
  if (r.status != pipeline::PushStatus::kTooLarge) return false;
  ++errors_;
  ++counters_.send_failures;
  mark_stopping(now);
  return true;
}

void TcpClientService::count_pipeline(TcpClientConn& st) {
  if (st.tx) st.tx->pipeline().set_totals(&pipeline_totals_);
}

void TcpClientService::add_pipeline_counters(pipeline::PipelineCounters& into) const {
  pipeline::accumulate(into, pipeline_totals_, true);
}

bool TcpClientService::drained(Instant now) const {
  (void)now;
  for (const auto& c : conns_) {
    if (c->c != nullptr) return false;
  }
  return true;
}

void TcpClientService::stop(Instant now) {
  mark_stopping(now);
  for (auto& c : conns_) {
    if (c->c != nullptr) {
      c->c->user = nullptr;
      c->c->abort();
    }
  }
}

// ---------------------------------------------------------------- source

struct TcpSourceService::Conn : TcpClientConn {
  explicit Conn(const ClientParams& p) : enc(p.framing, p.message_size) {
    if (p.framing == Framing::kLength32) tx = std::make_unique<PipelinedTx>(p.pipeline);
  }
  FrameEncoder enc;  // framing none: the byte stream
  uint64_t seq = 0;  // length32: messages pushed on this connection
  bool open = false;
  bool done = false;  // FIN sent
};

TcpSourceService::Conn& TcpSourceService::as(TcpClientConn& c) { return static_cast<Conn&>(c); }

bool TcpSourceService::start(Stack& stack, Instant now) {
  (void)stack;
  begin(now);
  open_more(now);
  return true;
}

void TcpSourceService::open_more(Instant now) {
  if (stopping_) return;
  for (uint64_t room = open_room(tcp_); room > 0 && conns_.size() < p_.connections; --room) {
    open(now);
  }
}

void TcpSourceService::open(Instant now) {
  auto conn = std::make_unique<Conn>(p_);
  Conn* st = conn.get();
  count_pipeline(*st);
  tcp::ConnCallbacks cb = callbacks(*st);
  // A sink sends nothing; anything else that arrives is read and dropped.
  cb.on_data = [this](tcp::Connection&, std::span<const uint8_t> d) -> size_t {
    counters_.rx_bytes += d.size();
    return d.size();
  };
  cb.on_closed = [this, st](tcp::Connection&, tcp::CloseReason r) {
    // A connection refused or timed out in the handshake failed to connect, also after
    // the limits were reached.
    if (!st->connected && r != tcp::CloseReason::kNormal)
      ++connect_failures_;
    else if (r != tcp::CloseReason::kNormal && !stopping_)
      ++errors_;
    st->c = nullptr;
    st->open = false;
  };
  st->c = tcp_.connect(p_.target, std::move(cb), 0, now);
  if (st->c == nullptr) {
    ++connect_failures_;
  } else {
    st->open = true;
  }
  conns_.push_back(std::move(conn));
}

uint64_t TcpSourceService::budget(Instant now) const {
  uint64_t b = UINT64_MAX;
  if (p_.count != 0) b = p_.count > started_ ? p_.count - started_ : 0;
  const uint64_t allowance = rate_allowance(now);
  if (allowance != UINT64_MAX) b = std::min(b, allowance > started_ ? allowance - started_ : 0);
  return b;
}

void TcpSourceService::pump(TcpClientConn& c) {
  Conn& st = as(c);
  // Nothing is produced before the handshake completes, so a message counted as sent
  // always had a connection to go to.
  if (st.c == nullptr || st.done || !st.connected) return;
  if (st.tx) {
    pump_messages(st);
  } else {
    pump_stream(st);
  }
}

// length32: whole pattern messages pushed into the connection's pipeline, which packs them
// into MSS-multiple batches and decides when TCP gets them (docs/pipeline.md).
void TcpSourceService::pump_messages(Conn& st) {
  const Instant now = tcp_.last_now();
  pipeline::TxPipeline& pl = st.tx->pipeline();
  for (;;) {
    st.tx->sync(*st.c);  // batch_limit() below
    counters_.tx_bytes += st.tx->write_kept(*st.c, kPatternFill);
    counters_.tx_bytes += st.tx->step(*st.c, now);
    if (stopping_ || limits_reached(now)) {
      mark_stopping(now);
      // Everything pushed is whole messages and goes out (at the pipeline's deadlines or on
      // on_writable) before the FIN.
      if (st.tx->pending_bytes() != 0) return;
      st.c->shutdown_write();
      st.done = true;
      return;
    }
    if (st.tx->blocked()) return;  // on_writable resumes
    // Straight into TCP's send ring while it has room (no batch, no copy); then about two
    // batches wait in the pipeline, one TCP is taking and one filling, unless TCP is full
    // (then on_writable makes them in place). The pipeline's own bound (max_batches) is
    // the hard limit.
    const uint64_t high = 2 * uint64_t{pl.batch_limit()};
    size_t sent = 0;
    const pipeline::BulkPushResult r = st.tx->push_bulk(*st.c, st.seq, budget(now), p_.message_size,
                                                        now, high, sent, kPatternFill);
    counters_.tx_bytes += sent;
    refused_too_large(r, now);
    const uint64_t pushed = r.accepted;
    st.seq += pushed;
    started_ += pushed;
    messages_ += pushed;
    counters_.tx_messages += pushed;
    bytes_ += pushed * p_.message_size;
    if (pushed == 0 && !stopping_) return;  // poll() resumes: rate schedule or deadline
  }
}

// framing none: the stream is pattern bytes with no boundaries, written straight into TCP.
void TcpSourceService::pump_stream(Conn& st) {
  Instant now = tcp_.last_now();
  for (;;) {
    if (!send_pending(st)) return;  // on_writable resumes
    if (stopping_ || limits_reached(now)) {
      mark_stopping(now);
      // Finish the message in progress, then FIN.
      if (!st.enc.at_boundary()) {
        size_t n = st.enc.produce(scratch_, st.enc.messages() + 1);
        st.pending.assign(scratch_.begin(), scratch_.begin() + static_cast<ptrdiff_t>(n));
        continue;
      }
      st.c->shutdown_write();
      st.done = true;
      return;
    }
    const size_t space = send_space(st);
    if (space == 0) return;
    // Messages this connection may still start: the global count and rate budgets.
    const uint64_t room = budget(now);
    if (room == 0 && st.enc.at_boundary()) return;  // poll() resumes on the rate schedule
    auto started = [&st] { return st.enc.messages() + (st.enc.at_boundary() ? 0 : 1); };
    uint64_t before = st.enc.messages();
    uint64_t s0 = started();
    uint64_t limit = room == UINT64_MAX ? UINT64_MAX : s0 + room;
    size_t n = st.enc.produce({scratch_.data(), space}, limit);
    if (n == 0) return;
    started_ += started() - s0;
    uint64_t done_msgs = st.enc.messages() - before;
    messages_ += done_msgs;
    counters_.tx_messages += done_msgs;
    bytes_ += done_msgs * p_.message_size;
    if (!send_scratch(st, n)) return;
  }
}

Instant TcpSourceService::poll(Instant now) {
  if (!stopping_ && limits_reached(now)) mark_stopping(now);
  open_more(now);
  Instant next = now + Duration::millis(stopping_ ? 10 : (p_.rate != 0 ? 1 : 100));
  // Connections still to open: as soon as handshakes complete (max_connecting).
  if (!stopping_ && conns_.size() < p_.connections) next = earliest(next, now + kOpenRetry);
  for (auto& c : conns_) {
    if (as(*c).open && c->c != nullptr) {
      pump(*c);
      if (c->tx && c->c != nullptr) next = earliest(next, c->tx->deadline(now));
    } else if (c->tx) {
      // Closed: its batches are freed (not inside a callback, where the TX step may
      // still be running); its counts stay in the totals.
      c->tx.reset();
    }
  }
  return next;
}

// ---------------------------------------------------------------- ping

struct TcpPingService::Conn : TcpClientConn {
  explicit Conn(const ClientParams& p)
      : enc(p.framing, p.message_size),
        dec(FrameDecoderConfig{p.framing, uint64_t{p.message_size} + 1, false}) {}
  FrameEncoder enc;
  FrameDecoder dec;
  Instant connect_at;
  Instant sent_at;
  uint64_t received = 0;   // echoes completed on this connection
  uint64_t sent = 0;       // length32: messages pushed on this connection
  uint64_t stream_rx = 0;  // framing none: bytes of the current echo received
  bool in_closed = false;  // listed in closed_ (reconnect mode)
};

TcpPingService::Conn& TcpPingService::as(TcpClientConn& c) { return static_cast<Conn&>(c); }

bool TcpPingService::start(Stack& stack, Instant now) {
  (void)stack;
  begin(now);
  conns_.reserve(p_.connections);
  for (uint32_t i = 0; i < p_.connections; ++i) conns_.push_back(std::make_unique<Conn>(p_));
  if (p_.reconnect) closed_.reserve(p_.connections);
  (void)poll(now);
  return true;
}

bool TcpPingService::open(Instant now, Conn& st) {
  st.enc = FrameEncoder(p_.framing, p_.message_size);
  st.dec.reset();
  st.received = 0;
  st.sent = 0;
  st.stream_rx = 0;
  if (p_.framing == Framing::kLength32) {
    // A new connection gets a pipeline as new: the last one's, reset (its spare batch kept,
    // so reconnecting allocates nothing; its counts stay in the totals).
    if (st.tx) {
      st.tx->reset();
    } else {
      st.tx = std::make_unique<PipelinedTx>(p_.pipeline);
      count_pipeline(st);
    }
  }
  st.pending.clear();
  st.pending_off = 0;
  st.connected = false;
  st.connect_at = now;
  Conn* s = &st;
  tcp::ConnCallbacks cb = callbacks(st);
  cb.on_data = [this, s](tcp::Connection&, std::span<const uint8_t> d) -> size_t {
    on_bytes(*s, d);
    return d.size();
  };
  cb.on_closed = [this, s](tcp::Connection&, tcp::CloseReason r) {
    if (!s->connected)
      ++connect_failures_;
    else if (r != tcp::CloseReason::kNormal && !(p_.reconnect && r == tcp::CloseReason::kAborted) &&
             !stopping_) {
      ++errors_;
    }
    s->c = nullptr;
    if (p_.reconnect && !s->in_closed) {  // opened again at the next poll
      s->in_closed = true;
      closed_.push_back(s);
    }
  };
  st.c = tcp_.connect(p_.target, std::move(cb), 0, now);
  if (st.c == nullptr) {
    ++connect_failures_;
    return false;
  }
  return true;
}

void TcpPingService::pump(TcpClientConn& c) {
  Conn& st = as(c);
  if (st.c == nullptr || !st.connected) return;
  if (st.tx) {
    pump_message(st);
  } else {
    pump_stream(st);
  }
}

// length32: pushes the next message, whole, into the pipeline when no echo is outstanding;
// the TX step hands it to TCP (a large one in pieces, as the send buffer drains).
void TcpPingService::pump_message(Conn& st) {
  const Instant now = tcp_.last_now();
  // Reconnect mode: one round trip per connection, which is closing once it is done.
  if (st.sent == st.received && !(p_.reconnect && st.received > 0)) {
    if (stopping_ || limits_reached(now)) {
      mark_stopping(now);
      st.c->shutdown_write();
      return;
    }
    // The rate counts round trips started, not completed: with many connections, those
    // in flight would otherwise let every idle one start at once.
    if (rate_allowance(now) <= round_trips_started_) return;  // poll() sends on schedule
    // The bulk path with one message: written in place, straight into TCP's send ring when
    // it has room (no scratch buffer, no batch), its rest (a large message) queued.
    size_t sent = 0;
    const pipeline::BulkPushResult r =
        st.tx->push_bulk(*st.c, st.sent, 1, p_.message_size, now, UINT64_MAX, sent, kPatternFill);
    counters_.tx_bytes += sent;
    if (refused_too_large(r, now)) return;
    if (r.accepted == 0) {  // out of memory: the next poll() retries
      walk_soon_ = true;
      return;
    }
    ++st.sent;
    ++round_trips_started_;
    st.sent_at = now;
    if (!st.tx->deadline(now).is_never()) walk_soon_ = true;  // a large message's rest
    return;
  }
  counters_.tx_bytes += st.tx->write_kept(*st.c, kPatternFill);
  counters_.tx_bytes += st.tx->step(*st.c, now);
  if (!st.tx->deadline(now).is_never()) walk_soon_ = true;
}

// framing none: the message is message_size pattern bytes of one stream; the echo is
// counted by bytes.
void TcpPingService::pump_stream(Conn& st) {
  Instant now = tcp_.last_now();
  for (;;) {
    if (!send_pending(st)) return;
    bool idle = st.enc.at_boundary() && st.enc.messages() == st.received;
    if (idle) {
      if (stopping_ || limits_reached(now)) {
        mark_stopping(now);
        st.c->shutdown_write();
        return;
      }
      if (rate_allowance(now) <= round_trips_started_) return;  // poll() sends on schedule
      st.sent_at = now;
    } else if (st.enc.at_boundary()) {
      return;  // the whole message is out; wait for its echo
    }
    const size_t space = send_space(st);
    if (space == 0) return;
    size_t n = st.enc.produce({scratch_.data(), space}, st.received + 1);
    if (n == 0) return;
    if (idle) ++round_trips_started_;  // its first bytes are out
    if (!send_scratch(st, n)) return;
  }
}

void TcpPingService::on_bytes(Conn& st, std::span<const uint8_t> data) {
  Instant now = tcp_.last_now();
  counters_.rx_bytes += data.size();
  auto complete = [&]() {
    ++st.received;
    ++messages_;
    ++counters_.rx_messages;
    ++counters_.tx_messages;
    bytes_ += p_.message_size;
    Instant from = p_.reconnect ? st.connect_at : st.sent_at;
    hist_.record(static_cast<uint64_t>((now - from).ns()));
    if (p_.reconnect) {
      // One round trip per connection: close, then open the next in poll().
      if (st.c != nullptr) st.c->close();
    } else {
      pump(st);
    }
  };
  if (p_.framing == Framing::kNone) {
    st.stream_rx += data.size();
    while (st.stream_rx >= p_.message_size && p_.message_size > 0) {
      st.stream_rx -= p_.message_size;
      complete();
    }
    return;
  }
  // Whole echoes, the usual case (one per segment), checked in place; an echo cut by the
  // segment's end, and a protocol error, take the decoder's event path below.
  std::span<const uint8_t> echo;
  while (st.dec.take_frame(data, echo)) {
    if (check_pattern(st.received, 0, echo) != echo.size()) ++errors_;
    if (echo.size() != p_.message_size) ++errors_;
    complete();
  }
  if (data.empty()) return;
  st.dec.feed(data, [&](const FrameEvent& ev) {
    if (ev.kind == FrameEventKind::kPayload) {
      if (check_pattern(st.received, ev.offset, ev.data) != ev.data.size()) ++errors_;
    } else if (ev.kind == FrameEventKind::kMessageComplete) {
      if (ev.length != p_.message_size) ++errors_;
      complete();
    } else if (ev.kind == FrameEventKind::kError) {
      ++errors_;
      if (st.c != nullptr) st.c->abort();
    }
  });
}

Instant TcpPingService::poll(Instant now) {
  if (!stopping_ && limits_reached(now)) mark_stopping(now);
  uint64_t room = stopping_ ? 0 : open_room(tcp_);
  // The walk over every connection when due; in between, only new connections are
  // opened: pacing the opens of many connections must not walk them all each time. At
  // the next poll when a pump from a callback left a pipeline deadline the walk has not
  // seen (length32: the rest of a large message) or a push to retry, and at every poll
  // with reconnect on a rate schedule (a first message waits for its turn there). A 64-byte
  // echo leaves neither: walking 64 connections at every poll cost the client about 150
  // instructions per round trip. With reconnect, the slots closed since are opened again
  // at once from their list, without the walk (a connection is driven by its callbacks:
  // connected, writable, echo received).
  if (stopping_ || (p_.reconnect && p_.rate != 0) || walk_soon_ || now >= walk_at_) {
    walk_at_ = walk(now, room);
  } else if (p_.reconnect) {
    reopen(now, room);
  }
  // Slots never opened yet, as far as max_connecting allows; the rest on a later poll.
  for (; room > 0 && opened_slots_ < conns_.size(); --room) open(now, as(*conns_[opened_slots_++]));
  if (!stopping_ && opened_slots_ < conns_.size()) return earliest(walk_at_, now + kOpenRetry);
  return walk_at_;
}

void TcpPingService::reopen(Instant now, uint64_t& room) {
  while (room > 0 && !closed_.empty()) {
    Conn& st = *closed_.back();
    closed_.pop_back();
    st.in_closed = false;
    if (st.c != nullptr) continue;  // a walk opened it meanwhile
    --room;
    open(now, st);
  }
}

// Sends on the rate schedule, reopens (reconnect) within `room`, and steps the pipelines;
// returns when the next walk is due.
Instant TcpPingService::walk(Instant now, uint64_t& room) {
  walk_soon_ = false;  // the pumps below set it again if need be
  Instant next = now + Duration::millis(stopping_ ? 10 : (p_.reconnect ? 1 : 100));
  if (!stopping_ && !p_.reconnect && p_.rate != 0) {
    // The rate schedule: the next round trip may start once the allowance passes the
    // round trips started. Not every millisecond: each walk visits every connection.
    const auto due = static_cast<int64_t>(static_cast<double>(round_trips_started_) * 1e9 /
                                          static_cast<double>(p_.rate));
    next = std::clamp(start_ + Duration::nanos(due), now + Duration::millis(1), next);
  }
  for (size_t i = 0; i < opened_slots_; ++i) {
    TcpClientConn& c = *conns_[i];
    if (c.c == nullptr) {
      if (p_.reconnect && room > 0) {
        --room;
        open(now, as(c));
      }
    } else {
      pump(c);
    }
    if (c.tx && c.c != nullptr) next = earliest(next, c.tx->deadline(now));
  }
  return next;
}

}  // namespace ws
