#include "stack/apps/http_client.hpp"

#include <algorithm>
#include <cstring>

#include "stack/apps/http_text.hpp"

namespace ws {

struct HttpClientService::Conn {
  uint32_t slot = 0;  // its index in conns_
  bool listed_free = false;
  bool deferred = false;  // in deferred_
  bool sending = false;   // in sending_
  tcp::Connection* c = nullptr;
  bool connected = false;
  bool reserved = false;   // a request was reserved when the connection was opened
  bool in_flight = false;  // a request is out and its response not complete
  bool closing = false;    // no more requests on this connection
  uint32_t requests = 0;   // requests sent on this connection
  Instant connect_at;
  Instant sent_at;
  const std::string* req = nullptr;  // the request being handed to TCP
  size_t req_off = 0;
  // The response being read: its header block (collected only when split), then the body.
  std::unique_ptr<char[]> head;
  size_t head_len = 0;
  bool in_body = false;
  bool bad = false;           // failed a check: counted once, when it is complete
  bool server_close = false;  // "Connection: close": the server closes after it
  uint64_t body_left = 0;
  uint64_t body_off = 0;
};

namespace {

using Head = HttpClientService::Head;

// One field of a response; false when the response cannot be framed.
bool take_field(std::string_view name, std::string_view value, Head& h) {
  if (http::iequals(name, "content-length")) {
    uint64_t v = 0;
    if (!http::parse_length(value, v) || (h.has_length && v != h.length)) return false;
    h.has_length = true;
    h.length = v;
  } else if (http::iequals(name, "transfer-encoding")) {
    return false;  // chunked bodies are not read: the length cannot be checked
  } else if (http::iequals(name, "connection")) {
    // The common value whole, before the token list (RFC 9110 7.6.1).
    if (!http::iequals(value, "keep-alive")) h.close = h.close || http::has_token(value, "close");
  }
  return true;
}

// One pass over the status line and the fields of the header block at the start of
// p[0, n). Returns the block's length when it is complete and usable; 0 otherwise (the
// caller tells the two apart by the block's empty line).
size_t parse_head(const char* p, size_t n, Head& h) {
  if (n < 12 || std::memcmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ') return 0;
  for (size_t i = 9; i < 12; ++i) {
    if (p[i] < '0' || p[i] > '9') return 0;
    h.status = static_cast<uint16_t>(h.status * 10 + (p[i] - '0'));
  }
  const void* lf = std::memchr(p + 12, '\n', n - 12);
  if (lf == nullptr) return 0;
  const size_t pos = static_cast<size_t>(static_cast<const char*>(lf) - p) + 1;
  const size_t end = http::parse_fields(
      p, n, pos,
      [&h](std::string_view name, std::string_view value) { return take_field(name, value, h); });
  // 1xx, 204 and 304 have no body (RFC 9112 6.3 item 1); anything else needs a length (a
  // response the client cannot frame ends the connection).
  return h.has_length || h.status < 200 || h.status == 204 || h.status == 304 ? end : 0;
}

}  // namespace

HttpClientService::HttpClientService(std::string name, ClientParams p, HttpClientParams h,
                                     tcp::TcpStack& tcp)
    : ClientService(std::move(name), p), h_(std::move(h)), tcp_(tcp) {
  // RFC 9112 3.2: Host is the target's authority. An HTTP/1.1 connection persists unless
  // a side says close (RFC 9112 9.3), so only the last request of a connection says it.
  const std::string head = "GET " + h_.path + " HTTP/1.1\r\nHost: " + p_.target.to_string() +
                           "\r\nUser-Agent: wirespeed\r\n";
  request_keep_ = head + "\r\n";
  request_close_ = head + "Connection: close\r\n\r\n";
}

HttpClientService::~HttpClientService() {
  for (auto& c : conns_) {
    if (c->c != nullptr) c->c->user = nullptr;
  }
}

bool HttpClientService::start(Stack& stack, Instant now) {
  (void)stack;
  begin(now);
  free_.reserve(p_.connections);
  deferred_.reset(p_.connections);
  sending_.reset(p_.connections);
  for (uint32_t i = 0; i < p_.connections; ++i) {
    conns_.push_back(std::make_unique<Conn>());
    conns_.back()->slot = i;
    conns_.back()->listed_free = true;
  }
  for (uint32_t i = p_.connections; i-- > 0;) free_.push_back(i);  // slot 0 pops first
  (void)poll(now);
  return true;
}

bool HttpClientService::may_reserve(Instant now) const {
  return (p_.count == 0 || started_ < p_.count) && rate_allowance(now) > started_;
}

bool HttpClientService::reserve(Instant now) {
  if (!may_reserve(now)) return false;
  ++started_;
  return true;
}

bool HttpClientService::open(Instant now, Conn& st) {
  // A fresh connection on the slot; what says where the slot is listed stays with it.
  Conn fresh;
  fresh.slot = st.slot;
  fresh.deferred = st.deferred;
  fresh.sending = st.sending;
  st = std::move(fresh);
  st.connect_at = now;
  Conn* s = &st;
  tcp::ConnCallbacks cb;
  cb.on_connected = [this, s](tcp::Connection&) {
    s->connected = true;
    note_connected();
    next_request(*s);
  };
  cb.on_writable = [this, s](tcp::Connection&) {
    if (s->req != nullptr) send_request(*s);
  };
  cb.on_data = [this, s](tcp::Connection&, std::span<const uint8_t> d) -> size_t {
    on_bytes(*s, d);
    return d.size();
  };
  cb.on_peer_closed = [this, s](tcp::Connection& c) {
    // A response is framed by its Content-Length, so a FIN inside one cuts it short.
    if (s->in_flight) fail(*s);
    s->closing = true;
    if (s->c != nullptr) c.close();
  };
  cb.on_closed = [this, s](tcp::Connection&, tcp::CloseReason r) {
    // A handshake the run's end cut (closing before connected: poll() when stopping) is
    // the client's doing, not a failure to connect.
    if (!s->connected) {
      if (!s->closing) ++connect_failures_;
    } else if (!stopping_ && (s->in_flight || (r != tcp::CloseReason::kNormal &&
                                               r != tcp::CloseReason::kAborted))) {
      ++errors_;
    }
    s->in_flight = false;
    s->reserved = false;
    s->c = nullptr;
    if (!s->listed_free) {
      s->listed_free = true;
      free_.push_back(s->slot);
    }
  };
  st.c = tcp_.connect(p_.target, std::move(cb), 0, now);
  if (st.c == nullptr) {
    ++connect_failures_;
    return false;
  }
  return true;
}

// next_request, send_request, on_head, on_body and complete are inline into on_bytes (and
// the other callers): every response goes through each once, where the calls cost about 57
// instructions a request (tests/bench/http_client_cost).
[[gnu::always_inline]] inline void HttpClientService::next_request(Conn& st) {
  if (st.c == nullptr || !st.connected || st.in_flight || st.closing) return;
  const Instant now = tcp_.last_now();
  const uint32_t per_conn = h_.requests_per_connection;
  if (stopping_ || limits_reached(now) || (per_conn != 0 && st.requests >= per_conn)) {
    if (limits_reached(now)) mark_stopping(now);
    st.closing = true;
    st.c->close();
    return;
  }
  if (st.reserved) {
    st.reserved = false;
  } else if (!reserve(now)) {
    if (!st.deferred) {  // poll() sends it on the rate schedule
      st.deferred = true;
      deferred_.push(st.slot);
    }
    return;
  }
  ++st.requests;
  st.req = per_conn != 0 && st.requests == per_conn ? &request_close_ : &request_keep_;
  st.req_off = 0;
  st.in_flight = true;
  st.sent_at = now;
  st.head_len = 0;
  st.in_body = false;
  st.bad = false;
  st.server_close = false;
  send_request(st);
}

[[gnu::always_inline]] inline void HttpClientService::send_request(Conn& st) {
  const std::string& r = *st.req;
  const size_t n =
      st.c->send({reinterpret_cast<const uint8_t*>(r.data()) + st.req_off, r.size() - st.req_off});
  counters_.tx_bytes += n;
  st.req_off += n;
  if (st.req_off < r.size()) {  // on_writable sends the rest; poll() tries as well
    if (!st.sending) {
      st.sending = true;
      sending_.push(st.slot);
    }
    return;
  }
  st.req = nullptr;
  ++counters_.tx_messages;
}

void HttpClientService::on_bytes(Conn& st, std::span<const uint8_t> data) {
  counters_.rx_bytes += data.size();
  while (!data.empty()) {
    if (!st.in_flight) return fail(st);  // bytes no request asked for
    if (st.in_body) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(st.body_left, data.size()));
      on_body(st, data.first(n));
      data = data.subspan(n);
      if (st.body_left == 0) complete(st);
      continue;
    }
    const char* p = reinterpret_cast<const char*>(data.data());
    if (st.head_len == 0) {
      // The whole header block in this delivery: parsed in place, in one pass.
      const size_t n = std::min(data.size(), kMaxHead);
      Head h;
      size_t end = last_head_.match(p, n);
      if (end != 0) {
        h = last_head_.value();
      } else if ((end = parse_head(p, n, h)) != 0) {
        last_head_.remember(p, end, h);
      }
      if (end != 0) {
        on_head(st, h);
      } else if ((end = http::find_end(p, n, 0)) != 0) {
        return fail(st);  // complete, not usable
      }
      if (end != 0) {
        data = data.subspan(end);
        if (st.body_left == 0) complete(st);
        continue;
      }
    }
    if (!st.head) st.head = std::make_unique<char[]>(kMaxHead);
    const size_t old = st.head_len;
    const size_t take = std::min(data.size(), kMaxHead - old);
    std::memcpy(st.head.get() + old, p, take);
    st.head_len += take;
    const size_t end = http::find_end(st.head.get(), st.head_len, old >= 2 ? old - 2 : 0);
    if (end == 0) {
      if (st.head_len == kMaxHead) return fail(st);  // a header block beyond the limit
      return;
    }
    st.head_len = 0;
    Head h;
    if (parse_head(st.head.get(), end, h) != end) return fail(st);
    on_head(st, h);
    data = data.subspan(end - old);
    if (st.body_left == 0) complete(st);
  }
  next_request(st);
}

// RFC 9112 6.3 (message body length): the client reads what the length says.
[[gnu::always_inline]] inline void HttpClientService::on_head(Conn& st, const Head& h) {
  const bool no_body = h.status < 200 || h.status == 204 || h.status == 304;
  st.server_close = h.close;
  st.bad =
      h.status != h_.expect_status || (h_.expect_body_bytes && h.length != *h_.expect_body_bytes);
  st.in_body = true;
  st.body_left = no_body ? 0 : h.length;
  st.body_off = 0;
}

[[gnu::always_inline]] inline void HttpClientService::on_body(Conn& st,
                                                              std::span<const uint8_t> data) {
  if (h_.check_body && !st.bad && !http::is_generated_body(st.body_off, data)) st.bad = true;
  st.body_off += data.size();
  st.body_left -= data.size();
}

[[gnu::always_inline]] inline void HttpClientService::complete(Conn& st) {
  st.in_flight = false;
  st.in_body = false;
  if (st.server_close) st.closing = true;  // its FIN follows; on_peer_closed closes
  ++counters_.rx_messages;
  if (st.bad) {
    ++errors_;
    return;
  }
  const Instant now = tcp_.last_now();
  ++messages_;
  bytes_ += st.body_off;
  // One request per connection: the time from the SYN, as ping's reconnect mode measures.
  const Instant from = h_.requests_per_connection == 1 ? st.connect_at : st.sent_at;
  hist_.record(static_cast<uint64_t>((now - from).ns()));
}

void HttpClientService::fail(Conn& st) {
  ++errors_;
  st.in_flight = false;
  st.closing = true;
  if (st.c != nullptr) st.c->abort();
}

Instant HttpClientService::poll(Instant now) {
  if (!stopping_ && limits_reached(now)) mark_stopping(now);
  // Every request of `count` answered, some with errors (which limits_reached does not count).
  if (!stopping_ && p_.count != 0 && started_ >= p_.count &&
      std::none_of(conns_.begin(), conns_.end(),
                   [](const auto& c) { return c->in_flight || c->reserved; }))
    mark_stopping(now);
  if (stopping_) {
    close_idle();
    return now + Duration::millis(10);
  }
  bool reopen = false;
  bool waiting = false;
  retry_sends();
  send_deferred(now);
  open_free(now, reopen, waiting);
  // Slots to refill, or the next request of the rate schedule.
  const Instant retry = waiting ? now + Duration::micros(200) : Instant::never();
  if (p_.rate == 0) return earliest(retry, reopen ? now : now + Duration::millis(100));
  const auto due =
      static_cast<int64_t>(static_cast<double>(started_) * 1e9 / static_cast<double>(p_.rate));
  return earliest(retry, std::max(now, start_ + Duration::nanos(due)));
}

void HttpClientService::retry_sends() {
  for (size_t n = sending_.size(); n > 0; --n) {
    Conn& st = *conns_[sending_.pop()];
    st.sending = false;
    if (st.c != nullptr && st.req != nullptr) send_request(st);  // re-listed if still short
  }
}

// The connections waiting on the rate, oldest first, as far as the schedule allows.
void HttpClientService::send_deferred(Instant now) {
  // Each at most once per call: a request next_request() cannot reserve is listed again.
  for (size_t n = deferred_.size(); n > 0 && may_reserve(now); --n) {
    Conn& st = *conns_[deferred_.pop()];
    st.deferred = false;
    next_request(st);
  }
}

// New connections on free slots, as far as max_connecting, the count and (one request per
// connection) the rate allow.
void HttpClientService::open_free(Instant now, bool& reopen, bool& waiting) {
  uint64_t room = open_room(tcp_);
  const bool one = h_.requests_per_connection == 1;
  while (!free_.empty()) {
    if (p_.count != 0 && started_ >= p_.count) return;
    if (room == 0) {
      waiting = true;  // max_connecting: once handshakes complete
      return;
    }
    if (one && !reserve(now)) return;
    Conn& st = *conns_[free_.back()];
    free_.pop_back();
    st.listed_free = false;
    --room;
    reopen = true;
    if (!open(now, st)) {  // counted; this slot tries again at the next poll
      st.listed_free = true;
      free_.push_back(st.slot);
      return;
    }
    st.reserved = one;
  }
}

// The run is over: connections between requests close; the others finish theirs first.
void HttpClientService::close_idle() {
  for (auto& cp : conns_) {
    Conn& st = *cp;
    if (st.c == nullptr) continue;
    if (!st.in_flight && !st.closing) {
      st.closing = true;
      st.c->close();
    } else if (st.req != nullptr) {
      send_request(st);
    }
  }
}

bool HttpClientService::drained(Instant now) const {
  (void)now;
  return std::all_of(conns_.begin(), conns_.end(), [](const auto& c) { return c->c == nullptr; });
}

void HttpClientService::fill(ClientReport& r) const { r.set_rtt(hist_); }

void HttpClientService::stop(Instant now) {
  mark_stopping(now);
  for (auto& c : conns_) {
    if (c->c != nullptr) {
      c->c->user = nullptr;
      c->c->abort();
    }
  }
}

}  // namespace ws
