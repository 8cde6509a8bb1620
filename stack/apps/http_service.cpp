#include "stack/apps/http_service.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "stack/apps/http_text.hpp"

namespace ws {

using http::find_end;
using http::iequals;

namespace {

// Generated body bytes are sent from the shared run (http::body_run), up to kChunk a send.
constexpr size_t kPeriod = http::kBodyPeriod;
constexpr size_t kChunk = http::kBodyRun;
// Generated bodies up to this size are stored after their headers (one send per response).
constexpr uint64_t kInlineMax = uint64_t{16} * 1024;

const char* reason_phrase(uint16_t status) {
  switch (status) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 303:
      return "See Other";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 410:
      return "Gone";
    case 413:
      return "Content Too Large";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      break;
  }
  if (status < 200) return "Informational";
  if (status < 300) return "Success";
  if (status < 400) return "Redirection";
  if (status < 500) return "Client Error";
  return "Server Error";
}

using http::is_tchar;

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char ch : s)
    if (!is_tchar(ch)) return false;
  return true;
}

std::string make_head(uint16_t status, std::string_view content_type, uint64_t length, bool keep,
                      std::string_view extra) {
  std::string h;
  h.reserve(160 + extra.size());
  h += "HTTP/1.1 ";
  h += std::to_string(status);
  h += ' ';
  h += reason_phrase(status);
  h += "\r\nServer: wirespeed\r\nContent-Type: ";
  h += content_type;
  h += "\r\nContent-Length: ";
  h += std::to_string(length);
  h += keep ? "\r\nConnection: keep-alive\r\n" : "\r\nConnection: close\r\n";
  h += extra;
  h += "\r\n";
  return h;
}

HttpService::Prepared prepare(uint16_t status, std::string_view content_type,
                              const std::optional<std::string>& body, uint64_t body_bytes,
                              bool keep, std::string_view extra) {
  HttpService::Prepared p;
  const uint64_t len = body ? body->size() : body_bytes;
  p.wire = make_head(status, content_type, len, keep, extra);
  p.head_len = p.wire.size();
  if (body) {
    p.wire += *body;
  } else if (body_bytes <= kInlineMax) {
    for (uint64_t i = 0; i < body_bytes; ++i) p.wire += http::body_byte(i);
  } else {
    p.stream_bytes = body_bytes;
  }
  return p;
}

HttpService::Answer make_answer(uint16_t status, std::string_view content_type,
                                const std::optional<std::string>& body, uint64_t body_bytes,
                                std::string_view extra = {}) {
  return {prepare(status, content_type, body, body_bytes, true, extra),
          prepare(status, content_type, body, body_bytes, false, extra)};
}

// The request line (RFC 9112 3): method SP request-target SP HTTP-version.
struct RequestLine {
  std::string_view method;
  std::string_view path;
  bool http11 = false;
};

// The path a request-target names: origin-form, absolute-form (RFC 9112 3.2.2) or
// asterisk-form, without its query; false for any other form.
bool target_path(std::string_view target, std::string_view& out) {
  std::string_view path;
  if (target.front() == '/' || target == "*") {
    path = target;
  } else if (size_t scheme = target.find("://");
             scheme != std::string_view::npos && scheme > 0 && is_token(target.substr(0, scheme))) {
    std::string_view after = target.substr(scheme + 3);
    const size_t slash = after.find('/');
    path = slash == std::string_view::npos ? std::string_view("/") : after.substr(slash);
  } else {
    return false;
  }
  out = path.substr(0, std::min(path.find('?'), path.find('#')));
  return true;
}

// A request-target character: visible, no space or control (RFC 9112 3.2).
bool is_visible(char ch) { return static_cast<unsigned char>(ch) > 0x20 && ch != 0x7f; }

// The request line at the start of p[0, n), in one pass; `pos` moves past its LF. Anything
// but a well-formed line (a token method, one SP, a target of visible characters, one SP,
// "HTTP/1." and a digit, CRLF or LF) or a line not complete in `n` bytes: false.
bool scan_request_line(const char* p, size_t n, size_t& pos, RequestLine& r) {
  size_t i = 0;
  while (i < n && is_tchar(p[i])) ++i;
  if (i == 0 || i >= n || p[i] != ' ') return false;
  const size_t t = i + 1;
  size_t j = t;
  while (j < n && is_visible(p[j])) ++j;
  if (j == t || j >= n || p[j] != ' ') return false;
  constexpr std::string_view kVersion = "HTTP/1.";
  if (n - j < 1 + kVersion.size() + 2 ||
      std::memcmp(p + j + 1, kVersion.data(), kVersion.size()) != 0)
    return false;
  size_t k = j + 1 + kVersion.size();
  const char minor = p[k++];
  if (minor < '0' || minor > '9') return false;
  if (p[k] == '\r') ++k;
  if (k >= n || p[k] != '\n') return false;
  if (!target_path({p + t, j - t}, r.path)) return false;
  r.method = {p, i};
  r.http11 = minor != '0';
  pos = k + 1;
  return true;
}

// What the header fields say about framing and persistence.
struct RequestHeaders {
  bool conn_close = false, conn_keep = false, has_length = false, chunked = false;
  uint64_t length = 0;
  int hosts = 0;
};

// One field of a request; false when it cannot be (a bad or conflicting Content-Length).
bool take_field(std::string_view name, std::string_view value, RequestHeaders& h) {
  if (iequals(name, "host")) {
    ++h.hosts;
  } else if (iequals(name, "content-length")) {
    uint64_t v = 0;
    if (!http::parse_length(value, v)) return false;
    if (h.has_length && v != h.length) return false;
    h.has_length = true;
    h.length = v;
  } else if (iequals(name, "transfer-encoding")) {
    h.chunked = true;
  } else if (iequals(name, "connection")) {
    // The common values whole, before the token list (RFC 9110 7.6.1).
    if (iequals(value, "keep-alive")) {
      h.conn_keep = true;
    } else if (iequals(value, "close")) {
      h.conn_close = true;
    } else {
      h.conn_close = h.conn_close || http::has_token(value, "close");
      h.conn_keep = h.conn_keep || http::has_token(value, "keep-alive");
    }
  }
  return true;
}

// One pass over the request line and the fields of the header block at the start of
// p[0, n). Returns the block's length when it is complete and well formed; 0 otherwise
// (not complete, or malformed: the caller finds the block's end by its empty line,
// RFC 9112 2.2, and answers 400 once it is complete).
size_t parse_request(const char* p, size_t n, RequestLine& line, RequestHeaders& h) {
  size_t pos = 0;
  if (!scan_request_line(p, n, pos, line)) return 0;
  return http::parse_fields(p, n, pos, [&h](std::string_view name, std::string_view value) {
    return take_field(name, value, h);
  });
}

}  // namespace

// A request's header block, parsed.
struct HttpService::Request {
  RequestLine line;
  RequestHeaders h;
};

// Per-connection state, in Connection::user. The header buffer is allocated only when
// a request arrives split across deliveries (a whole request is parsed in place).
struct HttpService::Conn {
  tcp::Connection* conn = nullptr;
  Conn* prev = nullptr;
  Conn* next = nullptr;
  bool linked = false;
  Instant last;
  std::unique_ptr<char[]> hdr;
  size_t hdr_len = 0;
  uint64_t skip = 0;  // request body bytes still to discard
  uint32_t requests = 0;
  // The response being queued: wire[out_off, out_len), then stream_left generated bytes.
  const Prepared* out = nullptr;
  size_t out_off = 0;
  size_t out_len = 0;
  uint64_t stream_off = 0;
  uint64_t stream_left = 0;
  bool close_after = false;
  bool draining = false;  // the last response is queued and FIN follows: input is discarded
  bool peer_closed = false;
};

HttpService::HttpService(std::string name, uint16_t port, tcp::TcpStack& tcp,
                         std::vector<HttpRoute> routes, HttpLimits limits)
    : Service(std::move(name)),
      port_(port),
      tcp_(tcp),
      routes_(std::move(routes)),
      limits_(limits) {
  if (limits_.max_header_bytes < 64) limits_.max_header_bytes = 64;
  if (limits_.max_requests_per_connection == 0) limits_.max_requests_per_connection = 1;
  answers_.reserve(routes_.size());
  for (const auto& r : routes_)
    answers_.push_back(make_answer(r.status, r.content_type, r.body, r.body_bytes));
  not_found_ = make_answer(404, "text/plain", std::string("Not Found\n"), 0);
  not_allowed_ = make_answer(405, "text/plain", std::string("Method Not Allowed\n"), 0,
                             "Allow: GET, HEAD\r\n");
  bad_request_ = make_answer(400, "text/plain", std::string("Bad Request\n"), 0);
  too_large_ = make_answer(431, "text/plain", std::string("Request Header Fields Too Large\n"), 0);
}

HttpService::~HttpService() = default;

bool HttpService::start(Stack& stack, Instant now) {
  (void)stack, (void)now;
  return listen();
}

bool HttpService::listen() {
  tcp::ListenCallbacks l;
  l.on_accept = [this](tcp::Connection& c) {
    accept(c);
    return true;
  };
  listening_ = tcp_.listen(port_, std::move(l));
  return listening_;
}

void HttpService::stop(Instant now) {
  (void)now;
  if (listening_) tcp_.unlisten(port_);
  listening_ = false;
}

void HttpService::accept(tcp::Connection& c) {
  ++counters_.connections;
  ++open_;
  Conn* st = &take_conn();
  st->conn = &c;
  c.user = st;
  touch(*st);
  tcp::ConnCallbacks cb;
  cb.on_data = [this](tcp::Connection& conn, std::span<const uint8_t> data) {
    touch(*static_cast<Conn*>(conn.user));
    return on_data(conn, data);
  };
  cb.on_writable = [this](tcp::Connection& conn) {
    auto& st = *static_cast<Conn*>(conn.user);
    touch(st);
    if (st.out && !pump(conn, st)) return;
    if (!st.draining) conn.resume_read();
    finish_if_done(conn, st);
  };
  cb.on_peer_closed = [this](tcp::Connection& conn) {
    auto& st = *static_cast<Conn*>(conn.user);
    touch(st);
    st.peer_closed = true;
    if (st.draining)
      conn.close();
    else
      finish_if_done(conn, st);
  };
  cb.on_closed = [this](tcp::Connection& conn, tcp::CloseReason) {
    auto* st = static_cast<Conn*>(conn.user);
    unlink(*st);
    give_conn(*st);
    conn.user = nullptr;
    --open_;
  };
  c.set_callbacks(std::move(cb));
}

HttpService::Conn& HttpService::take_conn() {
  if (spare_ == nullptr) return *conns_.emplace_back(std::make_unique<Conn>());
  Conn& st = *spare_;
  spare_ = st.next;
  st.next = nullptr;
  return st;
}

void HttpService::give_conn(Conn& st) {
  st = Conn{};  // a split request's header buffer goes with it
  st.next = spare_;
  spare_ = &st;
}

// touch, unlink, take_whole, apply and begin_response are inline into on_data (and the
// other callbacks): every request goes through each once, where the calls cost about 50
// instructions a request (tests/bench/http_client_cost).
[[gnu::always_inline]] inline void HttpService::touch(Conn& st) {
  if (limits_.idle_timeout.ns() <= 0) return;
  st.last = tcp_.last_now();
  if (st.linked && idle_tail_ == &st) return;
  unlink(st);
  st.prev = idle_tail_;
  st.next = nullptr;
  if (idle_tail_)
    idle_tail_->next = &st;
  else
    idle_head_ = &st;
  idle_tail_ = &st;
  st.linked = true;
}

[[gnu::always_inline]] inline void HttpService::unlink(Conn& st) {
  if (!st.linked) return;
  if (st.prev)
    st.prev->next = st.next;
  else
    idle_head_ = st.next;
  if (st.next)
    st.next->prev = st.prev;
  else
    idle_tail_ = st.prev;
  st.prev = st.next = nullptr;
  st.linked = false;
}

Instant HttpService::poll(Instant now) {
  if (limits_.idle_timeout.ns() <= 0) return Instant::never();
  while (idle_head_ && idle_head_->last + limits_.idle_timeout <= now) {
    Conn* st = idle_head_;
    unlink(*st);  // before abort(): its on_closed frees `st`
    st->conn->abort();
  }
  return idle_head_ ? idle_head_->last + limits_.idle_timeout : Instant::never();
}

// A half-closed client gets its answers, then the connection closes.
void HttpService::finish_if_done(tcp::Connection& c, Conn& st) {
  if (st.peer_closed && !st.draining && !st.out && c.readable() == 0) {
    st.draining = true;
    c.close();
  }
}

size_t HttpService::on_data(tcp::Connection& c, std::span<const uint8_t> data) {
  auto& st = *static_cast<Conn*>(c.user);
  const size_t max_hdr = limits_.max_header_bytes;
  const char* p = reinterpret_cast<const char*>(data.data());
  const size_t size = data.size();
  size_t used = 0;
  while (used < size && !st.draining && !(st.out && st.close_after)) {
    if (st.out) break;  // the previous response is not queued yet: wait for on_writable
    if (st.skip) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(st.skip, size - used));
      st.skip -= n;
      used += n;
      continue;
    }
    const size_t avail = size - used;
    if (st.hdr_len == 0) {
      // Empty lines before a request line are ignored (RFC 9112 section 2.2).
      if (p[used] == '\r' || p[used] == '\n') {
        ++used;
        continue;
      }
      // Fast path: the whole header block is here; parsed in place.
      if (const size_t end = take_whole(st, p + used, std::min(avail, max_hdr))) {
        used += end;
        pump(c, st);
        continue;
      }
      if (avail >= max_hdr) {
        ++counters_.rx_messages;
        begin_response(st, too_large_, false, false);
        pump(c, st);
        break;
      }
    }
    // Slow path: the block is split across deliveries; collect it.
    if (!st.hdr) st.hdr = std::make_unique<char[]>(max_hdr);
    const size_t old = st.hdr_len;
    const size_t take = std::min(avail, max_hdr - old);
    std::memcpy(st.hdr.get() + old, p + used, take);
    st.hdr_len += take;
    const size_t end = find_end(st.hdr.get(), st.hdr_len, old >= 2 ? old - 2 : 0);
    if (end) {
      used += end - old;
      st.hdr_len = 0;
      handle_request(st, {st.hdr.get(), end});
      pump(c, st);
      continue;
    }
    used += take;
    if (st.hdr_len == max_hdr) {
      ++counters_.rx_messages;
      st.hdr_len = 0;
      begin_response(st, too_large_, false, false);
      pump(c, st);
      break;
    }
  }
  // After a final response, nothing more is read.
  if (st.draining || (st.out && st.close_after)) used = size;
  counters_.rx_bytes += used;
  if (used == size && c.readable() <= used && st.peer_closed && !st.draining && !st.out) {
    st.draining = true;
    c.close();
  }
  return used;
}

[[gnu::always_inline]] inline size_t HttpService::take_whole(Conn& st, const char* p, size_t n) {
  // The last well-formed request again, or one parsed in one pass.
  size_t end = last_request_.match(p, n);
  if (end == 0) {
    Request r;
    if ((end = parse_request(p, n, r.line, r.h)) != 0) last_request_.remember(p, end, decide(&r));
  }
  if (end != 0) {
    ++counters_.rx_messages;
    apply(st, last_request_.value());
    return end;
  }
  // A complete block that is not well formed: answered 400.
  end = find_end(p, n, 0);
  if (end != 0) handle_request(st, {p, end});
  return end;
}

void HttpService::handle_request(Conn& st, std::string_view b) {
  Request r;
  ++counters_.rx_messages;
  apply(st, decide(parse_request(b.data(), b.size(), r.line, r.h) == b.size() ? &r : nullptr));
}

HttpService::Decision HttpService::decide(const Request* req) const {
  Decision d;
  if (req == nullptr) return d;
  const RequestLine& r = req->line;
  const RequestHeaders& h = req->h;
  // Request bodies are skipped by length only: a chunked body cannot be framed here
  // (RFC 9112 6.1 would have us answer 501; the connection cannot continue either way).
  if (h.chunked) return d;
  // RFC 9112 3.2: exactly one Host in HTTP/1.1.
  if (r.http11 ? h.hosts != 1 : h.hosts > 1) return d;
  d.keep = r.http11 ? !h.conn_close : (h.conn_keep && !h.conn_close);
  d.skip = h.length;
  d.head = r.method == "HEAD";
  if (!d.head && r.method != "GET") {
    d.answer = &not_allowed_;
    return d;
  }
  d.answer = &not_found_;
  for (size_t i = 0; i < routes_.size(); ++i) {
    if (routes_[i].path == r.path) {
      d.answer = &answers_[i];
      break;
    }
  }
  return d;
}

[[gnu::always_inline]] inline void HttpService::apply(Conn& st, const Decision& d) {
  ++st.requests;
  if (d.answer == nullptr) return begin_response(st, bad_request_, false, false);
  const bool keep = d.keep && st.requests < limits_.max_requests_per_connection;
  st.skip = d.skip;
  begin_response(st, *d.answer, keep, d.head);
}

[[gnu::always_inline]] inline void HttpService::begin_response(Conn& st, const Answer& a,
                                                               bool keep_alive, bool head_only) {
  const Prepared& p = keep_alive ? a.keep_alive : a.close;
  st.out = &p;
  st.out_off = 0;
  st.out_len = head_only ? p.head_len : p.wire.size();
  st.stream_off = 0;
  st.stream_left = head_only ? 0 : p.stream_bytes;
  st.close_after = !keep_alive;
}

bool HttpService::pump(tcp::Connection& c, Conn& st) {
  if (!st.out) return true;
  while (st.out_off < st.out_len) {
    const size_t want = st.out_len - st.out_off;
    const size_t n =
        c.send({reinterpret_cast<const uint8_t*>(st.out->wire.data()) + st.out_off, want});
    counters_.tx_bytes += n;
    st.out_off += n;
    if (n < want) return false;
  }
  while (st.stream_left > 0) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(st.stream_left, kChunk));
    const size_t start = static_cast<size_t>(st.stream_off % kPeriod);
    const size_t n = c.send({reinterpret_cast<const uint8_t*>(http::body_run()) + start, want});
    counters_.tx_bytes += n;
    st.stream_off += n;
    st.stream_left -= n;
    if (n < want) return false;
  }
  st.out = nullptr;
  ++counters_.tx_messages;
  if (st.close_after) {
    // FIN after the response; what the client still sends is read and discarded until
    // its own FIN (closing at once would answer it with RST, which can destroy the
    // response in the client's receive queue).
    st.draining = true;
    c.shutdown_write();
  }
  return true;
}

}  // namespace ws
