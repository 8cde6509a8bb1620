// Internal: section parsers (YAML -> typed values, with per-item checks) and the cross-item
// validation that runs after them. Parsers record where each item came from, so that checks
// spanning several items (duplicate names, overlapping subnets) can point at the right node.
#pragma once

#include <optional>
#include <vector>

#include "control/config/config.hpp"
#include "control/config/reader.hpp"

namespace ws::config::detail {

// Positions of an item's fields; a field's position is set only when its value was valid,
// so cross-item checks never pile further errors on top of a value already reported.
struct PortOrigin {
  std::optional<Pos> name;
  std::optional<Pos> address;
  std::optional<Pos> mtu;
  bool rx_queues_given = false;
  bool tx_queues_given = false;
  Pos item;
};

struct ServiceOrigin {
  std::optional<Pos> name;
  std::optional<Pos> port;     // server kinds with a valid port and protocol
  std::optional<Pos> message;  // message_size, when given
  bool kind_ok = false;
  bool protocol_ok = false;
  Pos item;
};

struct SaOrigin {
  std::optional<Pos> name;
  std::optional<Pos> spi;
  std::optional<Pos> local;
  bool direction_ok = false;
  bool remote_ok = false;
  Pos item;
};

struct PolicyOrigin {
  std::optional<Pos> outbound_sa;
  std::optional<Pos> inbound_sa;
  std::optional<Pos> remote;
  Pos item;
};

struct Origins {
  std::vector<PortOrigin> ports;
  std::vector<ServiceOrigin> services;
  std::optional<Pos> mbufs;
  std::optional<Pos> max_batch_bytes;
  std::vector<SaOrigin> sas;
  std::vector<PolicyOrigin> policies;
  std::optional<Pos> state_dir;
  bool state_dir_given = false;
  Pos ipsec;
};

void parse_dataplane(const MapView& m, DataplaneConfig& out, Origins& origins);
// Parses ports[] items; `list` is the value of the `ports` key.
void parse_ports(Diagnostics& d, const Value& list, std::vector<PortConfig>& out, Origins& origins);
void parse_services(Diagnostics& d, const Value& list, std::vector<ServiceConfig>& out,
                    Origins& origins);
void parse_tcp(const MapView& m, TcpConfig& out);
void parse_pipeline(const MapView& m, PipelineConfig& out, Origins& origins);
void parse_control(const MapView& m, ControlConfig& out);
void parse_ipv6(const MapView& m, Ipv6Config& out);
// A port's IPv4 address from `v` (the `address` key or an item of `addresses`).
bool parse_address4(Diagnostics& d, const Value& v, PortConfig& p, PortOrigin& o);
// ports[].addresses: one IPv4 address and any number of IPv6 ones; true when the IPv4 one
// was valid.
bool parse_addresses(Diagnostics& d, const Value& list, PortConfig& p, PortOrigin& o);
// ports[].gateway6, after the port's addresses.
void parse_gateway6(Diagnostics& d, const Value& v, PortConfig& p);
// ports[].neighbors, after the port's addresses (`address_ok`: its IPv4 one was valid).
void parse_neighbors(Diagnostics& d, const Value& list, bool address_ok, PortConfig& p);
void parse_ipsec(const MapView& m, IpsecConfig& out, Origins& origins);

// The whole document (a mapping at the root).
void parse_root(Diagnostics& d, const YAML::Node& root, Config& out, Origins& origins);

// Checks that span items or sections.
void validate(Diagnostics& d, const Config& config, const Origins& origins);
void validate_ipsec(Diagnostics& d, const Config& config, const Origins& origins);

// Reads a key file of hex text, refusing one that group or others may access (as ssh does).
// Errors go to `at`; they name the file and never quote its contents.
std::optional<ipsec::KeyMaterial> read_key_file(Diagnostics& d, const Value& at,
                                                const std::string& path, size_t expected_bytes,
                                                std::string_view what);

}  // namespace ws::config::detail
