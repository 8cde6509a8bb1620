// services[]: servers (echo, sink, iperf3, http) listen on a port; clients (source, ping,
// http with a target) talk to a target. Keys that only make sense for one side are errors on the
// other, so a mistyped kind cannot silently turn a load generator into a listener.
#include <algorithm>

#include "control/config/schema.hpp"

namespace ws::config::detail {

namespace {

constexpr uint64_t kMaxUdpPayload = 65507;      // 65535 - 20 (IPv4) - 8 (UDP)
constexpr uint64_t kMaxTcpMessage = 64u << 20;  // 64 MiB per framed message
constexpr uint64_t kMaxBodyBytes = 1ull << 30;  // 1 GiB generated HTTP body
constexpr uint32_t kDefaultDurationS = 10;

// Keys only client kinds take (besides `target`).
constexpr std::string_view kClientKeys[] = {"message_size", "connections", "duration_s", "rate",
                                            "count",        "reconnect",   "report"};
// Client keys of TCP only.
constexpr std::string_view kTcpClientKeys[] = {"max_connecting"};
// Keys only the HTTP client takes.
constexpr std::string_view kHttpClientKeys[] = {"path", "requests_per_connection", "expect_status",
                                                "expect_body_bytes", "check_body"};

bool has_control_chars(std::string_view s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

void parse_response(Diagnostics& d, const Value& item, HttpResponse& r,
                    std::optional<Pos>& path_pos) {
  MapView m(d, item, {"path", "body_bytes", "body", "status", "content_type"});
  if (!m.is_map()) return;
  if (m.require("path")) {
    auto v = *m.get("path");
    if (auto s = read_string(d, v)) {
      if ((*s)[0] != '/') {
        d.error(v.pos, v.path + ": '" + *s + "' must start with '/'");
      } else if (has_control_chars(*s) || s->find(' ') != std::string::npos) {
        d.error(v.pos, v.path + ": must not contain spaces or control characters");
      } else {
        r.path = *s;
        path_pos = v.pos;
      }
    }
  }
  if (m.has("body") && m.has("body_bytes")) {
    d.error(m.key_pos("body"), m.path() + ": give either 'body' or 'body_bytes', not both");
  }
  m.uint("body_bytes", 0, kMaxBodyBytes, r.body_bytes);
  if (auto v = m.get("body")) {
    if (auto s = read_string(d, *v, /*allow_empty=*/true)) {
      r.body_bytes = s->size();
      r.body = std::move(*s);
    }
  }
  m.uint("status", 100, 599, r.status);
  if (auto v = m.get("content_type")) {
    if (auto s = read_string(d, *v)) {
      if (has_control_chars(*s)) {
        d.error(v->pos, v->path + ": must not contain control characters");
      } else {
        r.content_type = *s;
      }
    }
  }
}

void parse_responses(Diagnostics& d, const Value& list, std::vector<HttpResponse>& out) {
  auto items = read_list(d, list);
  if (!items) return;
  if (items->empty()) {
    d.error(list.pos, list.path + ": an http service needs at least one response");
    return;
  }
  std::vector<Pos> seen;  // positions of valid paths, parallel to `out`
  for (const auto& item : *items) {
    HttpResponse r;
    std::optional<Pos> path_pos;
    parse_response(d, item, r, path_pos);
    if (path_pos) {
      for (size_t i = 0; i < out.size(); ++i) {
        if (!out[i].path.empty() && out[i].path == r.path) {
          d.error(*path_pos, item.path + ".path: duplicate response path '" + r.path +
                                 "' (first given at line " + std::to_string(seen[i].line) + ")");
          path_pos.reset();
          break;
        }
      }
    }
    seen.push_back(path_pos.value_or(Pos{}));
    out.push_back(std::move(r));
  }
}

void parse_http_client(Diagnostics& d, const MapView& m, HttpClientConfig& h) {
  if (auto v = m.get("path")) {
    if (auto s = read_string(d, *v)) {
      if ((*s)[0] != '/') {
        d.error(v->pos, v->path + ": '" + *s + "' must start with '/'");
      } else if (has_control_chars(*s) || s->find(' ') != std::string::npos) {
        d.error(v->pos, v->path + ": must not contain spaces or control characters");
      } else {
        h.path = *s;
      }
    }
  }
  m.uint("requests_per_connection", 0, 1000000000, h.requests_per_connection);
  m.uint("expect_status", 100, 599, h.expect_status);
  uint64_t bytes = 0;
  if (m.uint("expect_body_bytes", 0, kMaxBodyBytes, bytes)) h.expect_body_bytes = bytes;
  m.boolean("check_body", h.check_body);
}

// Kind and protocol come first: every later key is checked against them.
std::string parse_kind_protocol(Diagnostics& d, MapView& m, ServiceConfig& s, ServiceOrigin& o) {
  o.name = m.name(s.name, 64);
  if (m.require("kind")) {
    o.kind_ok = m.enumeration<ServiceKind>("kind", s.kind,
                                           {{"echo", ServiceKind::echo},
                                            {"sink", ServiceKind::sink},
                                            {"source", ServiceKind::source},
                                            {"ping", ServiceKind::ping},
                                            {"iperf3", ServiceKind::iperf3},
                                            {"http", ServiceKind::http}});
  }
  if (m.require("protocol")) {
    o.protocol_ok = m.enumeration<Protocol>("protocol", s.protocol,
                                            {{"tcp", Protocol::tcp}, {"udp", Protocol::udp}});
  }
  // `http` with a target is the load generator, a client kind.
  if (o.kind_ok && s.kind == ServiceKind::http && m.has("target"))
    s.kind = ServiceKind::http_client;
  std::string kind_name(to_string(s.kind));

  // iperf3 and HTTP are TCP protocols; the others work over either transport.
  if (o.kind_ok && o.protocol_ok && s.protocol == Protocol::udp &&
      (s.kind == ServiceKind::iperf3 || s.kind == ServiceKind::http ||
       s.kind == ServiceKind::http_client)) {
    d.error(m.get("protocol")->pos,
            m.key_path("protocol") + ": a '" + kind_name + "' service runs over tcp only");
    o.protocol_ok = false;
  }
  return kind_name;
}

// A server listens on 'port'; a client connects to 'target'.
void parse_side(Diagnostics& d, MapView& m, ServiceConfig& s, ServiceOrigin& o, bool server,
                bool client, const std::string& kind_name) {
  if (server) {
    if (m.has("target")) {
      d.error(m.key_pos("target"), m.key_path("target") + ": '" + kind_name +
                                       "' is a server kind; it listens on 'port' and takes no "
                                       "'target'");
    }
    if (m.require("port")) {
      if (m.uint("port", 1, 65535, s.port) && o.protocol_ok) o.port = m.get("port")->pos;
    }
  } else if (client) {
    if (m.has("port")) {
      d.error(m.key_pos("port"), m.key_path("port") + ": '" + kind_name +
                                     "' is a client kind; it connects to 'target' and takes no "
                                     "'port'");
    }
    if (m.require("target")) {
      if (auto e = read_endpoint(d, *m.get("target"))) s.target = *e;
    }
  } else {
    // Kind unknown: still check the values' types.
    m.uint("port", 1, 65535, s.port);
    if (auto v = m.get("target")) read_endpoint(d, *v);
  }
}

// The keys that shape a client's traffic; a server kind rejects them.
void parse_client_keys(Diagnostics& d, MapView& m, ServiceConfig& s, ServiceOrigin& o, bool server,
                       bool client, const std::string& kind_name) {
  if (server) {
    auto refuse = [&](std::string_view key) {
      if (m.has(key)) {
        d.error(m.key_pos(key), m.key_path(key) + ": '" + std::string(key) +
                                    "' is only for client kinds (source, ping, http with a "
                                    "target); '" +
                                    kind_name + "' is a server kind");
      }
    };
    for (auto key : kClientKeys) refuse(key);
    for (auto key : kTcpClientKeys) refuse(key);
  } else {
    const bool udp = o.protocol_ok && s.protocol == Protocol::udp;
    if (o.kind_ok && s.kind == ServiceKind::http_client && m.has("message_size")) {
      d.error(m.key_pos("message_size"),
              m.key_path("message_size") +
                  ": an http client sends GET requests for 'path'; it takes no 'message_size'");
    } else if (m.uint("message_size", 1, udp ? kMaxUdpPayload : kMaxTcpMessage, s.message_size)) {
      o.message = m.get("message_size")->pos;
    } else if (client) {
      s.message_size = s.kind == ServiceKind::ping          ? 64
                       : s.kind == ServiceKind::http_client ? 0
                                                            : 1024;
    }
    m.uint("connections", 1, 100000, s.connections);
    const bool has_duration = m.uint("duration_s", 0, 31536000, s.duration_s);
    const bool has_count = m.has("count");
    m.uint("count", 0, uint64_t{1} << 62, s.count);
    if (!has_duration && !has_count && !m.has("duration_s")) s.duration_s = kDefaultDurationS;
    m.uint("rate", 0, 1000000000, s.rate);
    m.string("report", s.report);
    if (m.uint("max_connecting", 1, 1000000, s.max_connecting) && o.protocol_ok &&
        s.protocol != Protocol::tcp) {
      d.error(m.get("max_connecting")->pos,
              m.key_path("max_connecting") + ": 'max_connecting' applies to tcp clients only");
    }
    if (m.boolean("reconnect", s.reconnect) && o.kind_ok && o.protocol_ok &&
        (s.kind != ServiceKind::ping || s.protocol != Protocol::tcp)) {
      d.error(m.get("reconnect")->pos,
              m.key_path("reconnect") + ": 'reconnect' applies to ping over tcp only");
    }
  }
}

void parse_framing(Diagnostics& d, MapView& m, ServiceConfig& s, const ServiceOrigin& o,
                   const std::string& kind_name) {
  if (auto v = m.get("framing")) {
    const bool framed_kind =
        !o.kind_ok || (s.kind != ServiceKind::iperf3 && s.kind != ServiceKind::http &&
                       s.kind != ServiceKind::http_client);
    if (m.enumeration<Framing>("framing", s.framing,
                               {{"length32", Framing::length32}, {"none", Framing::none}})) {
      if (!framed_kind) {
        d.error(v->pos, v->path + ": '" + kind_name + "' has its own protocol; remove 'framing'");
      } else if (o.protocol_ok && s.protocol == Protocol::udp) {
        d.error(v->pos, v->path +
                            ": framing applies to tcp only (over udp a message is one "
                            "datagram)");
      }
    }
  }
}

void parse_http_client_keys(Diagnostics& d, MapView& m, ServiceConfig& s, const ServiceOrigin& o) {
  if (o.kind_ok && s.kind == ServiceKind::http_client) {
    parse_http_client(d, m, s.http_client);
  } else {
    for (auto key : kHttpClientKeys) {
      if (m.has(key)) {
        d.error(m.key_pos(key), m.key_path(key) + ": '" + std::string(key) +
                                    "' is only for http clients (kind http with a 'target')");
      }
    }
  }
}

// 'responses' belongs to an http server, which needs at least one.
void parse_responses_key(Diagnostics& d, MapView& m, ServiceConfig& s, const ServiceOrigin& o,
                         const std::string& kind_name) {
  if (auto v = m.get("responses")) {
    if (o.kind_ok && s.kind == ServiceKind::http_client) {
      d.error(m.key_pos("responses"),
              v->path +
                  ": 'responses' is for an http server (with 'port'); an http service "
                  "with a 'target' is a client");
    } else if (o.kind_ok && s.kind != ServiceKind::http) {
      d.error(m.key_pos("responses"),
              v->path + ": 'responses' is only for http services, not '" + kind_name + "'");
    } else {
      parse_responses(d, *v, s.responses);
    }
  } else if (o.kind_ok && s.kind == ServiceKind::http) {
    d.error(m.pos(), m.path() +
                         ": missing required key 'responses' (an http service needs at "
                         "least one)");
  }
}

// `family`: a server answers both IPv4 and IPv6 unless told one; a client's family is
// its target's.
void parse_family(Diagnostics& d, MapView& m, ServiceConfig& s, bool client,
                  const std::string& kind_name) {
  if (!m.has("family")) return;
  if (client) {
    d.error(m.key_pos("family"), m.key_path("family") + ": '" + kind_name +
                                     "' is a client kind; its target's address decides the "
                                     "family");
    return;
  }
  m.enumeration<ws::AddrFamily>("family", s.family,
                                {{"ipv4", ws::AddrFamily::kIpv4}, {"ipv6", ws::AddrFamily::kIpv6}});
}

void parse_service(Diagnostics& d, const Value& item, ServiceConfig& s, ServiceOrigin& o) {
  MapView m(d, item,
            {"name",
             "kind",
             "protocol",
             "port",
             "family",
             "target",
             "message_size",
             "connections",
             "duration_s",
             "rate",
             "count",
             "reconnect",
             "framing",
             "report",
             "responses",
             "path",
             "requests_per_connection",
             "expect_status",
             "expect_body_bytes",
             "check_body",
             "max_connecting"});
  if (!m.is_map()) return;

  const std::string kind_name = parse_kind_protocol(d, m, s, o);
  const bool client = o.kind_ok && is_client(s.kind);
  const bool server = o.kind_ok && !is_client(s.kind);
  parse_side(d, m, s, o, server, client, kind_name);
  parse_family(d, m, s, client, kind_name);
  parse_client_keys(d, m, s, o, server, client, kind_name);
  parse_http_client_keys(d, m, s, o);
  parse_framing(d, m, s, o, kind_name);
  parse_responses_key(d, m, s, o, kind_name);
}

}  // namespace

void parse_services(Diagnostics& d, const Value& list, std::vector<ServiceConfig>& out,
                    Origins& origins) {
  auto items = read_list(d, list);
  if (!items) return;
  for (const auto& item : *items) {
    ServiceConfig s;
    ServiceOrigin o;
    o.item = item.pos;
    parse_service(d, item, s, o);
    out.push_back(std::move(s));
    origins.services.push_back(o);
  }
}

}  // namespace ws::config::detail
