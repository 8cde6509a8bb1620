// Checks of the ipsec section that span items: unique SA names and SPIs, SAs bound to our
// own addresses, and policies that name SAs of the right direction and mode.
#include "control/config/schema.hpp"

namespace ws::config::detail {

namespace {

std::string line_of(Pos p) { return "line " + std::to_string(p.line); }

std::string sa_path(size_t i) { return "ipsec.sas[" + std::to_string(i) + "]"; }

void check_sas(Diagnostics& d, const Config& c, const Origins& o) {
  const auto& sas = c.ipsec.sas;
  for (size_t i = 0; i < sas.size(); ++i) {
    const SaOrigin& so = o.sas[i];
    for (size_t j = 0; j < i; ++j) {
      const SaOrigin& to = o.sas[j];
      if (so.name && to.name && sas[i].name == sas[j].name) {
        d.error(*so.name, sa_path(i) + ".name: duplicate SA name '" + sas[i].name +
                              "' (first given at " + line_of(*to.name) + ")");
      }
      // Inbound packets are matched on (SPI, sender): that pair names one SA per direction.
      if (so.spi && to.spi && so.direction_ok && to.direction_ok && sas[i].spi == sas[j].spi &&
          sas[i].direction == sas[j].direction && sas[i].remote == sas[j].remote) {
        d.error(*so.spi, sa_path(i) + ".spi: SPI " + std::to_string(sas[i].spi) +
                             " is already used by " +
                             std::string(ipsec::to_string(sas[i].direction)) + " SA '" +
                             sas[j].name + "' with the same remote (" + line_of(*to.spi) + ")");
      }
    }
    if (!so.local) continue;
    bool ours = false;
    for (size_t p = 0; p < c.ports.size(); ++p) {
      ours = ours || (o.ports[p].address && c.ports[p].address.addr == sas[i].local);
    }
    if (!ours) {
      d.error(*so.local, sa_path(i) + ".local: " + sas[i].local.to_string() +
                             " is not the address of any port");
    }
  }
}

// The SA of that name, when exactly one SA has it (duplicates are reported on their own).
const SaConfig* find_sa(const Config& c, const Origins& o, const std::string& name, size_t& index) {
  const SaConfig* found = nullptr;
  for (size_t i = 0; i < c.ipsec.sas.size(); ++i) {
    if (!o.sas[i].name || c.ipsec.sas[i].name != name) continue;
    if (found != nullptr) return nullptr;
    found = &c.ipsec.sas[i];
    index = i;
  }
  return found;
}

// A protect policy's SA reference: it exists and has the right direction. Returns the SA
// when its direction and peer are known.
const SaConfig* check_ref(Diagnostics& d, const Config& c, const Origins& o, Pos at,
                          const std::string& path, const std::string& name, ipsec::Direction want) {
  size_t index = 0;
  const SaConfig* sa = find_sa(c, o, name, index);
  bool named = false;
  for (size_t i = 0; i < c.ipsec.sas.size(); ++i) {
    named = named || (o.sas[i].name && c.ipsec.sas[i].name == name);
  }
  if (!named) {
    d.error(at, path + ": no SA is named '" + name + "'");
    return nullptr;
  }
  if (sa == nullptr || !o.sas[index].direction_ok) return nullptr;
  if (sa->direction != want) {
    d.error(at, path + ": SA '" + name + "' is " + std::string(ipsec::to_string(sa->direction)) +
                    ", not " + std::string(ipsec::to_string(want)));
    return nullptr;
  }
  return o.sas[index].remote_ok ? sa : nullptr;
}

// A transport-mode SA adds no outer header: it carries traffic to and from its peer only,
// so a policy using one covers exactly that address.
void check_transport_remote(Diagnostics& d, const PolicyConfig& p, Pos at, const std::string& path,
                            const SaConfig* sa) {
  if (sa == nullptr || sa->mode != ipsec::Mode::transport) return;
  if (p.remote.prefix_len == 32 && p.remote.addr == sa->remote) return;
  d.error(at, path + ".remote: SA '" + sa->name +
                  "' is in transport mode, so the policy's remote must be " +
                  sa->remote.to_string() + "/32 (its peer), not " + p.remote.to_string());
}

void check_policies(Diagnostics& d, const Config& c, const Origins& o) {
  for (size_t i = 0; i < c.ipsec.policies.size(); ++i) {
    const PolicyConfig& p = c.ipsec.policies[i];
    const PolicyOrigin& po = o.policies[i];
    const std::string path = "ipsec.policies[" + std::to_string(i) + "]";
    const SaConfig* out = nullptr;
    const SaConfig* in = nullptr;
    if (po.outbound_sa) {
      out = check_ref(d, c, o, *po.outbound_sa, path + ".outbound_sa", p.outbound_sa,
                      ipsec::Direction::outbound);
    }
    if (po.inbound_sa) {
      in = check_ref(d, c, o, *po.inbound_sa, path + ".inbound_sa", p.inbound_sa,
                     ipsec::Direction::inbound);
    }
    if (!po.remote) continue;
    check_transport_remote(d, p, *po.remote, path, out != nullptr ? out : in);
    if (out != nullptr && in != nullptr && out->mode == ipsec::Mode::tunnel) {
      check_transport_remote(d, p, *po.remote, path, in);
    }
  }
}

}  // namespace

void validate_ipsec(Diagnostics& d, const Config& c, const Origins& o) {
  check_sas(d, c, o);
  check_policies(d, c, o);
  bool outbound = false;
  for (size_t i = 0; i < c.ipsec.sas.size(); ++i) {
    outbound = outbound ||
               (o.sas[i].direction_ok && c.ipsec.sas[i].direction == ipsec::Direction::outbound);
  }
  if (outbound && !o.state_dir_given) {
    d.error(o.ipsec,
            "ipsec: missing required key 'state_dir' (outbound SAs reserve their "
            "sequence numbers there)");
  }
}

}  // namespace ws::config::detail
