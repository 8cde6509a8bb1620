// ipsec: manually keyed ESP security associations (RFC 4303) and the policies that select
// them. Key files are read here, so a config that loads has every key it names.
#include <charconv>

#include "control/config/schema.hpp"

namespace ws::config::detail {

namespace {

constexpr uint64_t kMinSpi = 256;  // RFC 4303 2.1: 1..255 are reserved by IANA
constexpr uint32_t kMinReplayWindow = 32;
constexpr uint32_t kMaxReplayWindow = 4096;

// An SPI in decimal or as 0x-prefixed hex, the way operators copy it from other tools.
std::optional<uint32_t> read_spi(Diagnostics& d, const Value& v) {
  const bool plain = v.node.IsScalar() && v.node.Tag() != "!";
  const std::string s = plain ? v.node.Scalar() : std::string();
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), n, 16);
    if (ec != std::errc() || end != s.data() + s.size() || n < kMinSpi || n > 0xffffffffu) {
      d.error(v.pos, v.path + ": '" + s + "' is not an SPI in 0x100..0xffffffff");
      return std::nullopt;
    }
    return static_cast<uint32_t>(n);
  }
  auto n = read_uint(d, v, kMinSpi, 0xffffffffu);
  if (!n) return std::nullopt;
  return static_cast<uint32_t>(*n);
}

std::string key_layout(ipsec::Cipher c) {
  const std::string aes = std::to_string(ipsec::aes_key_bytes(c)) + "-byte AES key";
  return std::string(ipsec::to_string(c)) + " (" + aes +
         (ipsec::is_gcm(c) ? " and a 4-byte salt)" : " and a 32-byte HMAC key)");
}

void parse_sa_fields(const MapView& m, SaConfig& s, SaOrigin& o) {
  Diagnostics& d = m.diag();
  o.name = m.name(s.name, 64);
  if (m.require("direction")) {
    o.direction_ok = m.enumeration<ipsec::Direction>(
        "direction", s.direction,
        {{"outbound", ipsec::Direction::outbound}, {"inbound", ipsec::Direction::inbound}});
  }
  if (m.require("spi")) {
    auto v = *m.get("spi");
    if (auto spi = read_spi(d, v)) {
      s.spi = *spi;
      o.spi = v.pos;
    }
  }
  m.enumeration<ipsec::Mode>(
      "mode", s.mode, {{"transport", ipsec::Mode::transport}, {"tunnel", ipsec::Mode::tunnel}});
  if (m.require("local")) {
    auto v = *m.get("local");
    if (auto a = read_ipv4(d, v)) {
      s.local = *a;
      o.local = v.pos;
    }
  }
  if (m.require("remote")) {
    if (auto a = read_ipv4(d, *m.get("remote"))) {
      s.remote = *a;
      o.remote_ok = true;
    }
  }
  m.boolean("esn", s.esn);
}

void parse_sa(Diagnostics& d, const Value& item, SaConfig& s, SaOrigin& o) {
  MapView m(d, item,
            {"name", "direction", "spi", "mode", "local", "remote", "cipher", "key_file",
             "replay_window", "esn"});
  if (!m.is_map()) return;
  parse_sa_fields(m, s, o);

  bool cipher_ok = false;
  if (m.require("cipher")) {
    cipher_ok = m.enumeration<ipsec::Cipher>(
        "cipher", s.cipher,
        {{"aes-gcm-128", ipsec::Cipher::aes_gcm_128},
         {"aes-gcm-256", ipsec::Cipher::aes_gcm_256},
         {"aes-cbc-128-hmac-sha256", ipsec::Cipher::aes_cbc_128_hmac_sha256},
         {"aes-cbc-256-hmac-sha256", ipsec::Cipher::aes_cbc_256_hmac_sha256}});
  }
  if (m.require("key_file") && m.string("key_file", s.key_file) && cipher_ok) {
    auto key = read_key_file(d, *m.get("key_file"), s.key_file, ipsec::key_material_bytes(s.cipher),
                             key_layout(s.cipher));
    if (key) s.key = *key;
  }

  if (auto v = m.get("replay_window")) {
    if (o.direction_ok && s.direction == ipsec::Direction::outbound) {
      d.error(m.key_pos("replay_window"),
              v->path + ": the replay window applies to inbound SAs only");
    } else if (auto n = read_uint(d, *v, 0, kMaxReplayWindow)) {
      if (*n != 0 && *n < kMinReplayWindow) {
        d.error(v->pos, v->path + ": " + std::to_string(*n) + " is neither 0 (off) nor in " +
                            std::to_string(kMinReplayWindow) + ".." +
                            std::to_string(kMaxReplayWindow));
      } else {
        s.replay_window = static_cast<uint32_t>(*n);
      }
    }
  }
}

void parse_port_key(const MapView& m, std::string_view key, bool ports_allowed,
                    std::optional<uint16_t>& out) {
  auto v = m.get(key);
  if (!v) return;
  if (!ports_allowed) {
    m.diag().error(m.key_pos(key), v->path + ": ports need 'protocol: tcp' or 'protocol: udp'");
    return;
  }
  if (auto n = read_uint(m.diag(), *v, 1, 65535)) out = static_cast<uint16_t>(*n);
}

void parse_sa_ref(const MapView& m, std::string_view key, bool wanted, std::string& out,
                  std::optional<Pos>& pos) {
  auto v = m.get(key);
  if (!v) {
    if (wanted) {
      m.diag().error(m.pos(), m.path() + ": missing required key '" + std::string(key) +
                                  "' (a protect policy names both SAs)");
    }
    return;
  }
  if (!wanted) {
    m.diag().error(m.key_pos(key), v->path + ": only a protect policy names SAs");
    return;
  }
  if (auto s = read_string(m.diag(), *v)) {
    out = *s;
    pos = v->pos;
  }
}

void parse_policy(Diagnostics& d, const Value& item, PolicyConfig& p, PolicyOrigin& o) {
  MapView m(
      d, item,
      {"remote", "protocol", "local_port", "remote_port", "action", "outbound_sa", "inbound_sa"});
  if (!m.is_map()) return;
  if (m.require("remote")) {
    auto v = *m.get("remote");
    if (auto c = read_cidr(d, v)) {
      p.remote = *c;
      o.remote = v.pos;
    }
  }
  const bool protocol_ok = m.enumeration<PolicyProtocol>("protocol", p.protocol,
                                                         {{"any", PolicyProtocol::any},
                                                          {"tcp", PolicyProtocol::tcp},
                                                          {"udp", PolicyProtocol::udp},
                                                          {"icmp", PolicyProtocol::icmp}});
  // An invalid protocol was reported already: still check the ports' own values.
  const bool ports_allowed = (m.has("protocol") && !protocol_ok) ||
                             p.protocol == PolicyProtocol::tcp || p.protocol == PolicyProtocol::udp;
  parse_port_key(m, "local_port", ports_allowed, p.local_port);
  parse_port_key(m, "remote_port", ports_allowed, p.remote_port);
  bool action_ok = false;
  if (m.require("action")) {
    action_ok = m.enumeration<PolicyAction>("action", p.action,
                                            {{"protect", PolicyAction::protect},
                                             {"bypass", PolicyAction::bypass},
                                             {"discard", PolicyAction::discard}});
  }
  if (!action_ok) return;
  const bool protect = p.action == PolicyAction::protect;
  parse_sa_ref(m, "outbound_sa", protect, p.outbound_sa, o.outbound_sa);
  parse_sa_ref(m, "inbound_sa", protect, p.inbound_sa, o.inbound_sa);
}

// A list of mappings, each parsed by `parse` with its own origin record.
template <typename Item, typename Origin, typename Parse>
void parse_items(const MapView& m, std::string_view key, std::vector<Item>& out,
                 std::vector<Origin>& origins, Parse parse) {
  auto v = m.get(key);
  if (!v) return;
  auto items = read_list(m.diag(), *v);
  if (!items) return;
  for (const auto& item : *items) {
    Item x;
    Origin o;
    o.item = item.pos;
    parse(m.diag(), item, x, o);
    out.push_back(std::move(x));
    origins.push_back(o);
  }
}

}  // namespace

void parse_ipsec(const MapView& m, IpsecConfig& out, Origins& origins) {
  Diagnostics& d = m.diag();
  origins.ipsec = m.pos();
  if (auto v = m.get("state_dir")) {
    origins.state_dir_given = true;
    if (auto s = read_string(d, *v)) {
      if ((*s)[0] != '/') {
        d.error(v->pos, v->path + ": '" + *s + "' is not an absolute path");
      } else {
        out.state_dir = *s;
        origins.state_dir = v->pos;
      }
    }
  }
  parse_items<SaConfig, SaOrigin>(m, "sas", out.sas, origins.sas, parse_sa);
  parse_items<PolicyConfig, PolicyOrigin>(m, "policies", out.policies, origins.policies,
                                          parse_policy);
}

}  // namespace ws::config::detail
