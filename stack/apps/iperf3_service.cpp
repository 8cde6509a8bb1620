#include "stack/apps/iperf3_service.hpp"

#include <algorithm>
#include <cstring>

#include "stack/core/bytes.hpp"
#include "stack/iface/stack.hpp"

namespace ws {

using namespace iperf3;  // NOLINT(google-build-using-namespace): this file speaks iperf3

namespace {
constexpr size_t kMaxControlOut = size_t{256} * 1024;  // unread control bytes before we give up
constexpr size_t kPatternBytes = size_t{128} * 1024;
}  // namespace

// Per TCP connection, in Connection::user. A connection outlives its test when it is
// closing gracefully (kDone); `session` is then null. Every Conn is on the service's
// list so that stop() and the destructor can reset what is left.
struct Iperf3Service::Conn {
  enum class Role : uint8_t { kPending, kControl, kData, kDone };
  tcp::Connection* c = nullptr;
  Role role = Role::kPending;
  Session* session = nullptr;
  uint32_t stream = 0;  // index in session->streams (kData)
  uint8_t cookie[kCookieSize] = {};
  size_t cookie_len = 0;
  Instant deadline;  // kPending: the cookie must arrive by then
  Conn* prev = nullptr;
  Conn* next = nullptr;
};

struct Iperf3Service::Stream {
  uint32_t id = 0;
  bool sender = false;   // the server sends on it
  Conn* conn = nullptr;  // TCP, until the connection is closed or detached
  Endpoint peer;         // UDP
  uint64_t bytes = 0;    // data sent or received while the test ran
  uint64_t omit_bytes = 0;
  uint64_t retrans_base = 0;
  int64_t retransmits = -1;
  uint64_t datagrams_sent = 0;
  UdpReceiveStats rx;
  Pacer pacer;
};

struct Iperf3Service::Session {
  Phase phase = Phase::kParams;
  Conn* control = nullptr;
  uint8_t cookie[kCookieSize] = {};
  Params params;
  std::string in;  // control bytes received, not yet parsed (from in_pos)
  size_t in_pos = 0;
  std::string out;  // control bytes not yet taken by TCP
  std::vector<Stream> streams;
  UdpSocket* udp = nullptr;
  Instant started, ended;
  CpuTimes cpu_at_start;  // the core's CPU time when the test began
  Instant phase_deadline = Instant::never();
  uint64_t progress = 0, progress_seen = 0;  // bytes moved; the idle watchdog's input
  Instant progress_at;
  uint64_t sent_total = 0, blocks_sent = 0;  // over all sending streams, for -n / -k
  bool omit_done = false;
};

Iperf3Service::Iperf3Service(std::string name, uint16_t port, tcp::TcpStack& tcp,
                             Iperf3Limits limits)
    : Service(std::move(name)), port_(port), tcp_(tcp), limits_(limits) {
  // Data we send is a fixed pseudo-random pattern: its content does not matter to
  // iperf3, and a pattern that does not compress keeps any middlebox honest.
  pattern_.resize(kPatternBytes);
  uint32_t x = 0x9e3779b9u;
  for (auto& b : pattern_) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    b = static_cast<uint8_t>(x);
  }
  datagram_.assign(pattern_.begin(), pattern_.begin() + kMaxUdpBlock);
}

Iperf3Service::~Iperf3Service() {
  // The data plane stops services before the TCP stack goes; if not, reset what is left
  // so that no callback outlives the service.
  reset_all();
}

void Iperf3Service::reset_all() {
  if (session_) finish(End::kAborted);
  pending_.clear();
  while (conns_ != nullptr) {
    Conn* k = conns_;
    k->role = Conn::Role::kDone;
    k->session = nullptr;
    k->c->abort();  // on_closed unlinks and frees k
  }
}

bool Iperf3Service::start(Stack& stack, Instant now) {
  (void)now;
  stack_ = &stack;
  tcp::ListenCallbacks l;
  l.on_accept = [this](tcp::Connection& c) {
    if (pending_.size() >= limits_.max_pending) {
      ++stats_.refused;
      return false;
    }
    accept(c);
    return true;
  };
  listening_ = tcp_.listen(port_, std::move(l));
  return listening_;
}

void Iperf3Service::accept(tcp::Connection& c) {
  ++counters_.connections;
  auto* k = new Conn;
  k->c = &c;
  k->deadline = tcp_.last_now() + limits_.handshake_timeout;
  c.user = k;
  pending_.push_back(k);
  ++open_;
  k->next = conns_;
  if (conns_ != nullptr) conns_->prev = k;
  conns_ = k;
  tcp::ConnCallbacks cb;
  cb.on_data = [this](tcp::Connection& conn, std::span<const uint8_t> d) {
    return on_data(*static_cast<Conn*>(conn.user), d);
  };
  cb.on_writable = [this](tcp::Connection& conn) { on_writable(*static_cast<Conn*>(conn.user)); };
  cb.on_peer_closed = [this](tcp::Connection& conn) {
    on_peer_closed(*static_cast<Conn*>(conn.user));
  };
  cb.on_closed = [this](tcp::Connection& conn, tcp::CloseReason r) {
    on_closed(*static_cast<Conn*>(conn.user), r);
    conn.user = nullptr;
  };
  c.set_callbacks(std::move(cb));
}

void Iperf3Service::stop(Instant now) {
  (void)now;
  reset_all();
  if (listening_) tcp_.unlisten(port_);
  listening_ = false;
}

bool Iperf3Service::udp_bound() const { return session_ && session_->udp != nullptr; }

// ---- connections ----

size_t Iperf3Service::on_data(Conn& k, std::span<const uint8_t> data) {
  const size_t n = data.size();
  switch (k.role) {
    case Conn::Role::kPending: {
      const size_t take = std::min(kCookieSize - k.cookie_len, n);
      std::memcpy(k.cookie + k.cookie_len, data.data(), take);
      k.cookie_len += take;
      if (k.cookie_len == kCookieSize) {
        pending_.erase(std::find(pending_.begin(), pending_.end(), &k));
        classify(k, data.subspan(take));  // may free k
      }
      return n;
    }
    case Conn::Role::kControl: {
      Session& s = *k.session;
      if (s.in.size() - s.in_pos + n > kMaxJsonBytes + 64) {
        finish(End::kAborted);  // more than one message's worth unparsed: not a client we know
        return n;
      }
      s.in.append(reinterpret_cast<const char*>(data.data()), n);
      s.progress += n;
      control_input(s);  // may end the session and free k
      return n;
    }
    case Conn::Role::kData: {
      Session& s = *k.session;
      Stream& st = s.streams[k.stream];
      // Only bytes that arrive while the test runs count, as in iperf3.
      if (s.phase == Phase::kRunning && !st.sender) {
        st.bytes += n;
        s.progress += n;
        counters_.rx_bytes += n;
      }
      return n;
    }
    case Conn::Role::kDone:
      return n;
  }
  return n;
}

void Iperf3Service::classify(Conn& k, std::span<const uint8_t> rest) {
  const Instant now = tcp_.last_now();
  if (!session_) {
    session_ = std::make_unique<Session>();
    Session& s = *session_;
    ++stats_.tests_started;
    std::memcpy(s.cookie, k.cookie, kCookieSize);
    s.control = &k;
    s.progress_at = now;
    s.phase_deadline = now + limits_.handshake_timeout;
    s.in.reserve(1024);
    k.role = Conn::Role::kControl;
    k.session = &s;
    send_state(s, kParamExchange);
    if (!rest.empty()) {
      s.in.append(reinterpret_cast<const char*>(rest.data()), rest.size());
      control_input(s);
    }
    return;
  }
  Session& s = *session_;
  if (s.phase == Phase::kCreateStreams && s.params.proto == Proto::kTcp &&
      s.streams.size() < s.params.total_streams() &&
      std::memcmp(s.cookie, k.cookie, kCookieSize) == 0) {
    add_stream(s, &k, {});
    if (s.streams.size() == s.params.total_streams()) begin_test(s, now);
    return;
  }
  deny(k);
}

void Iperf3Service::deny(Conn& k) {
  // iperf3 answers a busy server's or a stranger's connection with one byte and closes.
  ++stats_.access_denied;
  retire(k);
  const uint8_t b = static_cast<uint8_t>(kAccessDenied);
  k.c->send({&b, 1});
  k.c->close();
}

void Iperf3Service::on_writable(Conn& k) {
  if (k.session == nullptr) return;
  Session& s = *k.session;
  if (k.role == Conn::Role::kControl) {
    flush_control(s);
  } else if (k.role == Conn::Role::kData) {
    pump_tcp(s, s.streams[k.stream], tcp_.last_now());
  }
}

void Iperf3Service::on_peer_closed(Conn& k) {
  switch (k.role) {
    case Conn::Role::kPending:
      pending_.erase(std::find(pending_.begin(), pending_.end(), &k));
      retire(k);
      k.c->close();
      return;
    case Conn::Role::kControl:
      // The client closes its control connection only after IPERF_DONE (which ends
      // the session first); anything earlier means it is gone.
      finish(End::kAborted);
      return;
    case Conn::Role::kData: {
      Session& s = *k.session;
      s.streams[k.stream].conn = nullptr;
      retire(k);
      k.c->close();
      return;
    }
    case Conn::Role::kDone:
      k.c->close();
      return;
  }
}

void Iperf3Service::on_closed(Conn& k, tcp::CloseReason r) {
  (void)r;
  if (k.role == Conn::Role::kPending) {
    pending_.erase(std::find(pending_.begin(), pending_.end(), &k));
  } else if (k.session != nullptr) {
    Session& s = *k.session;
    if (k.role == Conn::Role::kData) {
      s.streams[k.stream].conn = nullptr;
    } else if (k.role == Conn::Role::kControl) {
      s.control = nullptr;
      k.session = nullptr;
      finish(End::kAborted);
    }
  }
  if (k.prev != nullptr) {
    k.prev->next = k.next;
  } else {
    conns_ = k.next;
  }
  if (k.next != nullptr) k.next->prev = k.prev;
  --open_;
  delete &k;
}

void Iperf3Service::retire(Conn& k) {
  k.session = nullptr;
  k.role = Conn::Role::kDone;
  k.deadline = tcp_.last_now() + limits_.linger;
  linger_next_ = earliest(linger_next_, k.deadline);
}

// ---- control channel ----

void Iperf3Service::control_input(Session& s) {
  while (session_.get() == &s) {
    const size_t avail = s.in.size() - s.in_pos;
    const auto* p = reinterpret_cast<const uint8_t*>(s.in.data() + s.in_pos);
    if (s.phase == Phase::kParams || s.phase == Phase::kResults) {
      if (avail < 4) break;
      const uint32_t len = load_be32(p);
      if (len > kMaxJsonBytes) {
        if (s.phase == Phase::kParams) {
          server_error(s, kErrRecvParams);
        } else {
          finish(End::kAborted);
        }
        return;
      }
      if (avail < 4 + static_cast<size_t>(len)) break;
      std::string_view json(s.in.data() + s.in_pos + 4, len);
      s.in_pos += 4 + len;
      if (s.phase == Phase::kParams) {
        if (!handle_params(s, json)) return;
      } else {
        // The client's own results: read to keep the exchange in step. Its figures are
        // the client's business; a malformed object means a broken client.
        const std::optional<json::Json> doc = json::parse(json);
        if (!doc || !doc->is_object()) {
          finish(End::kAborted);
          return;
        }
        send_results(s);
      }
    } else {
      if (avail < 1) break;
      ++s.in_pos;
      handle_state(s, static_cast<int8_t>(*p));
    }
  }
  if (session_.get() == &s && s.in_pos == s.in.size()) {
    s.in.clear();
    s.in_pos = 0;
  }
}

bool Iperf3Service::handle_params(Session& s, std::string_view json) {
  const std::optional<json::Json> doc = json::parse(json);
  if (!doc) {
    server_error(s, kErrRecvParams);
    return false;
  }
  if (auto err = parse_params(*doc, s.params)) {
    server_error(s, err->code);
    return false;
  }
  if (s.params.proto == Proto::kUdp) {
    if (stack_ == nullptr) {
      server_error(s, kErrStreamListen);
      return false;
    }
    s.udp = stack_->udp_bind(
        port_, [this](UdpSocket&, const UdpDatagram& d, Instant now) { udp_input(d, now); });
    if (s.udp == nullptr) {
      server_error(s, kErrStreamListen);
      return false;
    }
  }
  s.streams.reserve(s.params.total_streams());
  s.phase = Phase::kCreateStreams;
  s.phase_deadline = tcp_.last_now() + limits_.handshake_timeout;
  send_state(s, kCreateStreams);
  return true;
}

void Iperf3Service::handle_state(Session& s, int8_t state) {
  const Instant now = tcp_.last_now();
  if (state == kTestEnd && s.phase == Phase::kRunning) {
    end_test(s, now);
  } else if (state == kIperfDone && s.phase == Phase::kDisplay) {
    finish(End::kCompleted);
  } else {
    // CLIENT_TERMINATE (the user stopped the client), or a state out of turn.
    finish(End::kAborted);
  }
}

void Iperf3Service::send_control(Session& s, std::string_view bytes) {
  s.out.append(bytes);
  flush_control(s);
}

void Iperf3Service::flush_control(Session& s) {
  if (s.control == nullptr || s.out.empty()) return;
  const size_t n =
      s.control->c->send({reinterpret_cast<const uint8_t*>(s.out.data()), s.out.size()});
  s.out.erase(0, n);
  s.progress += n;
  // A client that stops reading its control connection is dropped at the next poll
  // (ending the session here would pull it from under the caller).
  if (s.out.size() > kMaxControlOut) s.phase_deadline = Instant::from_ns(0);
}

void Iperf3Service::server_error(Session& s, int32_t code) {
  // SERVER_ERROR, then iperf3's error number and an errno (none here), big-endian.
  ++stats_.server_errors;
  uint8_t msg[9];
  msg[0] = static_cast<uint8_t>(kServerError);
  store_be32(msg + 1, static_cast<uint32_t>(code));
  store_be32(msg + 5, 0);
  send_control(s, std::string_view(reinterpret_cast<const char*>(msg), sizeof msg));
  finish(End::kRejected);  // closed gracefully so that the message is delivered
}

// ---- streams ----

void Iperf3Service::add_stream(Session& s, Conn* k, Endpoint udp_peer) {
  Stream st;
  // iperf3 numbers streams 1, 3, 4, 5, ... (iperf_add_stream); both ends number them in
  // the order they were made, and the client matches our results by these ids.
  st.id = s.streams.empty() ? 1 : static_cast<uint32_t>(s.streams.size() + 2);
  // In --bidir the client opens its sending streams first: we receive on those.
  st.sender = s.streams.size() >= s.params.server_receivers();
  st.peer = udp_peer;
  if (k != nullptr) {
    st.conn = k;
    k->role = Conn::Role::kData;
    k->session = &s;
    k->stream = static_cast<uint32_t>(s.streams.size());
  }
  s.streams.push_back(st);
}

void Iperf3Service::begin_test(Session& s, Instant now) {
  s.phase = Phase::kRunning;
  s.started = now;
  if (cpu_clock_) s.cpu_at_start = cpu_clock_();
  s.progress_at = now;
  s.phase_deadline =
      s.params.time_s > 0
          ? now + Duration::nanos(static_cast<int64_t>((s.params.time_s + s.params.omit_s) * 1e9)) +
                limits_.overrun
          : Instant::never();
  for (auto& st : s.streams) {
    st.pacer.start(now, s.params.rate_bps);
    if (st.conn != nullptr) st.retrans_base = st.conn->c->info().retransmits;
  }
  send_state(s, kTestStart);
  send_state(s, kTestRunning);
  for (auto& st : s.streams) pump_tcp(s, st, now);
}

void Iperf3Service::end_test(Session& s, Instant now) {
  s.ended = now;
  // As iperf3 does at TEST_END: stop counting and close the data connections.
  for (auto& st : s.streams) {
    if (st.conn == nullptr) continue;
    Conn* k = st.conn;
    if (st.sender) {
      st.retransmits = static_cast<int64_t>(k->c->info().retransmits - st.retrans_base);
    }
    st.conn = nullptr;
    retire(*k);
    k->c->close();
  }
  s.phase = Phase::kResults;
  s.phase_deadline = now + limits_.handshake_timeout;
  send_state(s, kExchangeResults);
}

void Iperf3Service::send_results(Session& s) {
  const Params& p = s.params;
  const bool tcp = p.proto == Proto::kTcp;
  ResultsHeader h;
  // iperf3 reports -1 when the server only received, else whether TCP_INFO retransmit
  // counts exist (they do here for TCP; UDP has none).
  h.sender_has_retransmits = p.server_senders() == 0 ? -1 : (tcp ? 1 : 0);
  if (tcp) {
    h.congestion = tcp_.config().congestion == tcp::CongestionAlgo::kNewReno ? "newreno" : "cubic";
  }
  const Instant measured_from =
      s.omit_done ? s.started + Duration::nanos(static_cast<int64_t>(p.omit_s * 1e9)) : s.started;
  const double secs = s.ended > measured_from ? (s.ended - measured_from).secs() : 0.0;
  // CPU use over the whole test (start to end, as iperf3 measures it), in percent.
  if (cpu_clock_ && s.ended > s.started) {
    const CpuTimes now_cpu = cpu_clock_();
    const double wall = (s.ended - s.started).secs();
    h.cpu_user = 100.0 * (now_cpu.user - s.cpu_at_start.user).secs() / wall;
    h.cpu_system = 100.0 * (now_cpu.system - s.cpu_at_start.system).secs() / wall;
    h.cpu_total = h.cpu_user + h.cpu_system;
  }
  std::string text;
  if (p.get_server_output) {
    uint64_t rx = 0, tx = 0;
    for (const auto& st : s.streams) (st.sender ? tx : rx) += st.bytes - st.omit_bytes;
    text = "wirespeed iperf3 service " + name() + ": " + std::to_string(s.streams.size()) +
           " stream(s), " + std::to_string(rx) + " bytes received, " + std::to_string(tx) +
           " bytes sent in " + std::to_string(secs) + " s\n";
    h.server_output_text = text;
  }
  std::vector<StreamResult> results;
  results.reserve(s.streams.size());
  for (const auto& st : s.streams) {
    StreamResult& r = results.emplace_back();
    r.id = st.id;
    r.bytes = st.bytes - st.omit_bytes;
    r.retransmits = tcp && st.sender ? st.retransmits : -1;
    if (!tcp && !st.sender) {
      r.jitter_s = st.rx.jitter_s;
      r.errors = st.rx.lost;
      r.packets = st.rx.highest;
    } else if (!tcp) {
      r.packets = st.datagrams_sent;
    }
    r.end_s = secs;
  }
  const std::string json = results_json(h, results);
  std::string framed;
  framed.reserve(json.size() + 5);
  append_framed(framed, json);
  framed.push_back(static_cast<char>(kDisplayResults));
  s.phase = Phase::kDisplay;
  send_control(s, framed);
}

uint64_t Iperf3Service::send_budget(const Session& s) const {
  const Params& p = s.params;
  uint64_t limit = UINT64_MAX;
  if (p.bytes != 0) limit = p.bytes;
  if (p.blocks != 0) limit = std::min(limit, p.blocks * p.len);
  return limit > s.sent_total ? limit - s.sent_total : 0;
}

void Iperf3Service::pump_tcp(Session& s, Stream& st, Instant now) {
  if (s.phase != Phase::kRunning || !st.sender || st.conn == nullptr) return;
  while (true) {
    const uint64_t budget = std::min(st.pacer.allowance(now, st.bytes), send_budget(s));
    if (budget == 0) return;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(budget, pattern_.size()));
    const size_t sent = st.conn->c->send({pattern_.data(), want});
    st.bytes += sent;
    s.sent_total += sent;
    s.progress += sent;
    counters_.tx_bytes += sent;
    if (sent < want) return;  // on_writable resumes
  }
}

void Iperf3Service::pump_udp(Session& s, Stream& st, Instant now) {
  if (s.phase != Phase::kRunning || !st.sender || s.udp == nullptr) return;
  const Params& p = s.params;
  const std::span<uint8_t> d(datagram_.data(), p.len);
  for (uint32_t i = 0; i < limits_.udp_burst; ++i) {
    if (st.pacer.allowance(now, st.bytes) == 0) return;
    if ((p.bytes != 0 && s.sent_total >= p.bytes) || (p.blocks != 0 && s.blocks_sent >= p.blocks))
      return;
    write_udp_header(d, p.udp_counters_64bit, now, st.datagrams_sent + 1);
    if (!s.udp->send_to(st.peer, d, now)) {
      ++counters_.send_failures;  // no buffer or no route: try again at the next poll
      return;
    }
    ++st.datagrams_sent;
    st.bytes += p.len;
    s.sent_total += p.len;
    ++s.blocks_sent;
    s.progress += p.len;
    counters_.tx_bytes += p.len;
    ++counters_.tx_messages;
  }
}

void Iperf3Service::udp_input(const UdpDatagram& d, Instant now) {
  if (!session_ || session_->params.proto != Proto::kUdp) {
    ++stats_.udp_stray;
    return;
  }
  Session& s = *session_;
  for (auto& st : s.streams) {
    if (st.peer != d.src) continue;
    if (s.phase != Phase::kRunning || st.sender) {
      ++stats_.udp_stray;  // late, early, or on the stream we send on
      return;
    }
    UdpHeader h;
    if (!parse_udp_header(d.payload, s.params.udp_counters_64bit, h)) {
      ++stats_.udp_short;
      return;
    }
    st.rx.on_datagram(h, d.payload.size(), now);
    st.bytes += d.payload.size();
    s.progress += d.payload.size();
    counters_.rx_bytes += d.payload.size();
    ++counters_.rx_messages;
    return;
  }
  // A new stream announces itself with one 4-byte datagram while streams are created.
  if (s.phase == Phase::kCreateStreams && d.payload.size() == kUdpConnectSize &&
      s.streams.size() < s.params.total_streams()) {
    add_stream(s, nullptr, d.src);
    const auto reply = udp_connect_reply(d.payload);
    if (!s.udp->send_to(d.src, reply, now)) ++counters_.send_failures;
    s.progress += kUdpConnectSize;
    if (s.streams.size() == s.params.total_streams()) begin_test(s, now);
    return;
  }
  ++stats_.udp_stray;
}

// ---- teardown and timers ----

void Iperf3Service::finish(End how) {
  std::unique_ptr<Session> s = std::move(session_);
  if (!s) return;
  const bool graceful = how != End::kAborted;
  if (how == End::kCompleted) {
    ++stats_.tests_completed;
  } else {
    ++stats_.tests_aborted;
  }
  if (s->udp != nullptr && stack_ != nullptr) stack_->udp_unbind(port_);
  s->udp = nullptr;
  // Detach every connection first: closing one may run callbacks for the others.
  std::vector<Conn*> conns;
  conns.reserve(s->streams.size() + 1);
  for (auto& st : s->streams) {
    if (st.conn != nullptr) conns.push_back(st.conn);
    st.conn = nullptr;
  }
  if (s->control != nullptr) conns.push_back(s->control);
  s->control = nullptr;
  for (Conn* k : conns) retire(*k);
  for (Conn* k : conns) {
    if (graceful) {
      k->c->close();
    } else {
      k->c->abort();  // frees k
    }
  }
}

Instant Iperf3Service::poll(Instant now) {
  Instant next = Instant::never();
  for (size_t i = 0; i < pending_.size();) {
    Conn* k = pending_[i];
    if (k->deadline <= now) {
      pending_[i] = pending_.back();
      pending_.pop_back();
      ++stats_.timeouts;
      k->role = Conn::Role::kDone;
      k->c->abort();
      continue;
    }
    next = earliest(next, k->deadline);
    ++i;
  }
  if (now >= linger_next_) {
    // Connections closed after their test whose client never closed its side.
    linger_next_ = Instant::never();
    for (Conn* k = conns_; k != nullptr;) {
      Conn* following = k->next;
      if (k->role == Conn::Role::kDone) {
        if (k->deadline <= now) {
          ++stats_.lingered;
          k->c->abort();  // frees k
        } else {
          linger_next_ = earliest(linger_next_, k->deadline);
        }
      }
      k = following;
    }
  }
  next = earliest(next, linger_next_);
  if (!session_) return next;
  Session& s = *session_;
  if (s.progress != s.progress_seen) {
    s.progress_seen = s.progress;
    s.progress_at = now;
  }
  if (now >= s.phase_deadline || now - s.progress_at >= limits_.idle_timeout) {
    ++stats_.timeouts;
    finish(End::kAborted);
    return next;
  }
  next = earliest(next, earliest(s.phase_deadline, s.progress_at + limits_.idle_timeout));
  if (s.phase != Phase::kRunning) return next;
  const Params& p = s.params;
  if (p.omit_s > 0 && !s.omit_done &&
      now >= s.started + Duration::nanos(static_cast<int64_t>(p.omit_s * 1e9))) {
    for (auto& st : s.streams) st.omit_bytes = st.bytes;
    s.omit_done = true;
  }
  bool paced = false;
  for (auto& st : s.streams) {
    if (!st.sender) continue;
    if (p.proto == Proto::kUdp) {
      pump_udp(s, st, now);
      paced = true;
    } else if (p.rate_bps != 0) {
      pump_tcp(s, st, now);
      paced = true;
    }
  }
  if (paced) {
    // Unlimited UDP (-b 0) polls every loop; a rate is served every pacing interval.
    const Duration tick = p.rate_bps == 0
                              ? Duration::zero()
                              : Duration::micros(std::clamp<int64_t>(p.pacing_us, 100, 10000));
    next = earliest(next, now + tick);
  }
  return next;
}

}  // namespace ws
