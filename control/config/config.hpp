// The wirespeed configuration: typed, validated values loaded from a YAML file.
//
// Both binaries link this library. Loading never throws: every problem becomes a ConfigError
// with the position of the offending YAML node, and a config is produced only when there are
// no errors at all (a config is applied whole or not at all). Keys, defaults and ranges are
// documented in docs/config.md; key names are fixed (keys are added, never renamed).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stack/core/addr.hpp"
#include "stack/ipsec/types.hpp"

namespace ws::config {

// ---------------------------------------------------------------------------------------------
// Enumerations (YAML spelling in comments; to_string() returns that spelling).

enum class IdleMode { adaptive, poll };       // adaptive | poll
enum class Offloads { automatic, software };  // auto | software
// How a port's mbufs hold a frame: one mbuf with room for the whole frame, or a
// chain of standard (2 KiB) mbufs (RX scatter, TX multi-segment).
enum class FrameBuffers { automatic, whole, chained };  // auto | whole | chained
enum class Tso { automatic, off };                      // auto | off
// Whether a port's TCP and UDP checksums are computed on send and verified on receive (on),
// or neither (off: a link that cannot corrupt a frame, net_memif only).
enum class L4Checksums { on, off };  // on | off
// How a port forms its IPv6 link-local interface identifier.
enum class LinkLocal { stable, eui64 };  // stable (RFC 7217) | eui64 (RFC 4291 appendix A)
// `http_client` is `kind: http` with a `target` (the load generator); it is written
// `http` in the config and in reports, like the responder.
enum class ServiceKind { echo, sink, source, ping, iperf3, http, http_client };
enum class Protocol { tcp, udp };
enum class Framing { length32, none };
enum class Congestion { cubic, newreno };
// tcp.syncookies: `auto` (when a listener's SYN queue is full), `always`, `never`.
enum class SynCookies { when_full, always, never };
enum class PolicyProtocol { any, tcp, udp, icmp };  // any | tcp | udp | icmp
using PolicyAction = ipsec::PolicyAction;           // protect | bypass | discard

std::string_view to_string(IdleMode v);
std::string_view to_string(Offloads v);
std::string_view to_string(FrameBuffers v);
std::string_view to_string(Tso v);
std::string_view to_string(L4Checksums v);
std::string_view to_string(LinkLocal v);
std::string_view to_string(ServiceKind v);
std::string_view to_string(Protocol v);
std::string_view to_string(Framing v);
std::string_view to_string(Congestion v);
std::string_view to_string(PolicyProtocol v);
std::string_view to_string(PolicyAction v);

// Client kinds connect to a `target`; server kinds listen on a `port`.
constexpr bool is_client(ServiceKind k) {
  return k == ServiceKind::source || k == ServiceKind::ping || k == ServiceKind::http_client;
}

// ---------------------------------------------------------------------------------------------
// Sections. Every default below is the value used when the key is absent.

// Seeded fault injection on the receive path, for testing against real peers
// where the kernel has no netem: every received frame may be lost, duplicated,
// corrupted (one random bit after the Ethernet header), held back behind the
// next one (reordered), or delayed. Probabilities are in parts per million. Off
// unless a rate is set. Because the peer's ACKs pass through it too, both
// directions of a TCP connection feel it.
struct FaultConfig {
  uint64_t seed = 1;
  uint32_t loss_ppm = 0;
  uint32_t duplicate_ppm = 0;
  uint32_t corrupt_ppm = 0;
  uint32_t reorder_ppm = 0;
  uint32_t delay_us = 0;     // constant extra delay
  uint32_t tx_loss_ppm = 0;  // frames we send that are dropped before the port
  bool enabled() const {
    return loss_ppm || duplicate_ppm || corrupt_ppm || reorder_ppm || delay_us || tx_loss_ppm;
  }
};

struct DataplaneConfig {
  std::vector<uint32_t> lcores{0};  // one pipeline per lcore; each 0..127, unique
  // `lcores: auto`: the CPUs this process may run on, less one for the OS when there are
  // more than two; ports whose queue counts are not given get one queue pair per lcore.
  bool lcores_auto = false;
  IdleMode idle = IdleMode::adaptive;
  std::string file_prefix = "wirespeed";  // DPDK --file-prefix
  bool hugepages = false;                 // false: EAL --no-huge with memory_mb of plain memory
  uint32_t memory_mb = 512;               // EAL -m
  std::vector<std::string> eal_args;      // passed verbatim, after the generated arguments
  uint32_t stats_interval_ms = 100;       // how often per-core counters are published
  uint32_t heap_reserve_mb = 32;          // heap each pipeline pre-faults at start
  uint32_t mbufs = 8191;                  // mbuf pool size per port
  Offloads offloads = Offloads::automatic;
  FaultConfig faults;  // testing only
};

// ports[].neighbors: a link address given, not resolved.
struct NeighborEntry {
  ws::IpAddr address;  // on the port's link: inside its IPv4 subnet, link-local or in a prefix
  ws::MacAddr mac;     // unicast
};

struct PortConfig {
  std::string name;
  // Exactly one of device (a DPDK vdev string) and pci (a PCI address) is non-empty.
  std::string device;
  std::string pci;
  uint32_t mtu = 1500;  // 68..9600
  uint16_t rx_queues = 1;
  uint16_t tx_queues = 1;
  uint16_t rx_descriptors = 1024;  // power of two, 64..16384
  uint16_t tx_descriptors = 1024;
  ws::Ipv4Cidr address;                 // host address and subnet
  std::optional<ws::Ipv4Addr> gateway;  // inside the subnet of `address`
  // `addresses`: the IPv6 ones, in the order given (the IPv4 one is `address`).
  std::vector<ws::Ipv6Cidr> addresses6;
  // IPv6 default router: link-local, or inside one of `addresses6`.
  std::optional<ws::Ipv6Addr> gateway6;
  std::optional<ws::MacAddr> mac;  // absent: the port's own MAC
  // auto: chained when a frame outgrows a standard mbuf and the port can scatter
  // and send chains, else whole. `chained` on a port that cannot is a start error.
  FrameBuffers frame_buffers = FrameBuffers::automatic;
  // TCP segmentation offload where the port has it (auto) or never (off); also
  // off when dataplane.offloads is software.
  Tso tso = Tso::automatic;
  // off: TCP and UDP checksums over IPv4 neither computed on send (the field keeps the
  // pseudo-header sum, as a NIC with checksum offload is handed it) nor verified on receive,
  // as a veth pair does; for shared-memory links (net_memif), where no bit is ever flipped.
  // Both ends must set it. Refused at start on any other driver.
  L4Checksums l4_checksums = L4Checksums::on;
  // Static neighbours (at most 64): used at once, never aged or replaced by ARP or
  // neighbour discovery.
  std::vector<NeighborEntry> neighbors;
};

struct HttpResponse {
  std::string path;                 // starts with '/'
  uint64_t body_bytes = 0;          // generated body of this size (when `body` is absent)
  std::optional<std::string> body;  // literal body; when set, body_bytes == body->size()
  uint16_t status = 200;            // 100..599
  std::string content_type = "text/html";
};

// The HTTP load generator's own keys (`kind: http` with a `target`).
struct HttpClientConfig {
  std::string path = "/";                     // the request target
  uint32_t requests_per_connection = 0;       // 0: keep-alive until the run ends
  uint16_t expect_status = 200;               // other statuses count as errors
  std::optional<uint64_t> expect_body_bytes;  // a Content-Length that differs is an error
  bool check_body = false;  // bodies must be the generated body of an `http` service
};

struct ServiceConfig {
  std::string name;
  ServiceKind kind = ServiceKind::echo;
  Protocol protocol = Protocol::tcp;
  uint16_t port = 0;                             // server kinds: the port listened on (1..65535)
  ws::AddrFamily family = ws::AddrFamily::kAny;  // server kinds: `family:` ipv4 | ipv6
  std::optional<ws::Endpoint> target;            // client kinds: where to connect / send
  // Client parameters (source, ping); zero where "no limit" is meaningful.
  uint32_t message_size = 0;  // source: default 1024; ping: default 64
  uint32_t connections = 1;
  uint32_t duration_s = 0;  // 0 = no time limit; default 10 unless `count` is given
  uint64_t rate = 0;        // messages per second; 0 = as fast as possible
  uint64_t count = 0;       // messages (source) or round trips (ping); 0 = no limit
  bool reconnect = false;   // ping over TCP: a new connection per round trip
  std::string report;       // JSON summary file; empty = none
  // TCP clients: the core's connections in SYN-SENT at most (docs/config.md).
  uint32_t max_connecting = 256;
  // How messages are delimited on a TCP stream (echo, sink, source, ping). Unused over UDP,
  // where a message is one datagram.
  Framing framing = Framing::length32;
  std::vector<HttpResponse> responses;  // http only
  HttpClientConfig http_client;         // http with a target only
};

struct KeepaliveConfig {
  bool enabled = false;
  uint32_t idle_s = 7200;
  uint32_t interval_s = 75;
  uint32_t probes = 9;
};

struct TcpConfig {
  Congestion congestion = Congestion::cubic;
  uint32_t time_wait_ms = 60000;       // 0..600000
  uint32_t time_wait_reuse_ms = 1000;  // 2..60000: TIME_WAIT takeover by our own connects
  uint32_t rto_min_ms = 200;
  uint32_t rto_initial_ms = 1000;
  uint32_t delayed_ack_ms = 40;  // 0 = acknowledge every segment at once
  bool nagle = false;
  KeepaliveConfig keepalive;
  // std::nullopt = "auto": the receive window is autotuned (dynamic right-sizing) and the
  // send buffer grows with the congestion window, both up to buffer_max_bytes.
  std::optional<uint32_t> receive_buffer_bytes;
  std::optional<uint32_t> send_buffer_bytes;
  uint32_t buffer_max_bytes = 6291456;  // autotune ceiling
  uint32_t syn_burst_budget = 8;        // 0: never shed SYNs
  uint32_t syn_shed_half_open = 64;     // shed only from this many half-open connections
  uint32_t syn_backlog = 1024;
  uint32_t accept_backlog = 1024;
  uint32_t max_connections = 65536;
  uint32_t time_wait_max = 32768;
  bool timestamps = true;
  bool sack = true;
  bool window_scaling = true;
  // Path MTU: packetization-layer probing and black-hole detection (RFC 4821 / 8899),
  // and how long a lowered path MTU stays lowered (RFC 1191 section 6.3).
  bool mtu_probing = true;
  uint32_t pmtu_recovery_s = 600;  // 1..86400
  // Hostile traffic (docs/security.md): SYN cookies, and the per-second limits on RSTs
  // to no connection and on challenge ACKs (RFC 5961 section 7).
  SynCookies syncookies = SynCookies::when_full;
  uint32_t rst_rate_limit = 1000;       // 1..10000000
  uint32_t challenge_ack_limit = 1000;  // 1..10000000
};

struct PipelineConfig {
  uint32_t max_batch_bytes = 65535;  // 1500..262144; batches are whole multiples of the MSS
  uint32_t backoff_us = 20;          // deterministic backoff in batching mode (docs/pipeline.md)
  bool batching = true;              // false: every message is sent at once
  uint32_t max_batches = 4096;       // batches in flight per pipeline before backpressure
  bool mss_multiple = true;          // false: fixed max_batch_bytes batches (a benchmark baseline)
};

// IPv6 settings shared by every port.
struct Ipv6Config {
  LinkLocal link_local = LinkLocal::stable;
  // RFC 7217's secret_key: 16 bytes; all zero when not given (the identifiers stay
  // stable but are predictable from the MAC, as EUI-64 ones are).
  std::array<uint8_t, 16> stable_secret{};
  // Neighbour solicitations sent for duplicate address detection (RFC 4862 5.1
  // DupAddrDetectTransmits); 0 turns detection off.
  uint32_t dad_transmits = 1;  // 0..10
  // Router advertisements (RFC 4861 6.3.4): learn a default router (used when a port has
  // no gateway6) and the link MTU; prefixes are not autoconfigured.
  bool accept_ra = false;
};

struct ControlConfig {
  ws::Endpoint metrics_listen{ws::Ipv4Addr::from_octets(127, 0, 0, 1), 9550};
};

// One IPsec ESP security association (RFC 4303), keyed by hand.
struct SaConfig {
  std::string name;  // metrics label; unique
  ipsec::Direction direction = ipsec::Direction::outbound;
  uint32_t spi = 0;  // 256..2^32-1 (RFC 4303 2.1: 1..255 are reserved)
  ipsec::Mode mode = ipsec::Mode::transport;
  ws::Ipv4Addr local;   // one of our port addresses (tunnel: the outer source)
  ws::Ipv4Addr remote;  // the peer (tunnel: the outer destination)
  ipsec::Cipher cipher = ipsec::Cipher::aes_gcm_128;
  std::string key_file;           // as written in the config
  ipsec::KeyMaterial key;         // the file's bytes: ipsec::key_material_bytes(cipher) of them
  uint32_t replay_window = 1024;  // inbound: 0 (off) or 32..4096
  bool esn = false;               // 64-bit extended sequence numbers (RFC 4303 2.2.1)
};

// Which traffic an SA pair protects (RFC 4301 4.4.1, simplified): first match wins.
struct PolicyConfig {
  ws::Ipv4Cidr remote;  // the peer's address or subnet (the inner address in tunnel mode)
  PolicyProtocol protocol = PolicyProtocol::any;
  std::optional<uint16_t> local_port;   // tcp and udp only
  std::optional<uint16_t> remote_port;  // tcp and udp only
  PolicyAction action = PolicyAction::bypass;
  std::string outbound_sa;  // protect only: names an outbound SA
  std::string inbound_sa;   // protect only: names an inbound SA
};

struct IpsecConfig {
  std::string state_dir;  // absolute; required when there is an outbound SA
  std::vector<SaConfig> sas;
  std::vector<PolicyConfig> policies;  // a packet that matches none is bypassed
};

struct Config {
  int version = 1;
  DataplaneConfig dataplane;
  std::vector<PortConfig> ports;  // at least one
  std::vector<ServiceConfig> services;
  TcpConfig tcp;
  PipelineConfig pipeline;
  ControlConfig control;
  IpsecConfig ipsec;  // no SAs: no ESP
  Ipv6Config ipv6;
};

// ---------------------------------------------------------------------------------------------
// Loading.

struct ConfigError {
  std::string file;
  int line = 0;  // 1-based; 0 when the error concerns the file as a whole
  int col = 0;   // 1-based; 0 when the error concerns the file as a whole
  std::string message;

  // "FILE:LINE:COL: message"
  std::string format() const;
};

struct LoadResult {
  std::optional<Config> config;     // set if and only if errors is empty
  std::vector<ConfigError> errors;  // sorted by position
};

// A missing or unreadable file gives one error "FILE:0:0: cannot read: <strerror>".
LoadResult load_config_file(const std::string& path);
LoadResult load_config_string(std::string_view yaml, const std::string& name_for_errors);

// The text of configs/quickstart.yaml, compiled in at build time.
std::string_view embedded_quickstart_config();

// A one-paragraph human summary (printed by --check on success).
std::string describe(const Config& config);

}  // namespace ws::config
