// One core's network stack: its interfaces (one per port, each with its own queue
// on this core), ARP, IPv4, ICMP and UDP, and the hook TCP plugs into. Nothing here
// touches EAL or ethdev; frames arrive through receive() and leave through each
// interface's PacketIo. Time arrives as a parameter.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stack/core/addr.hpp"
#include "stack/core/counters.hpp"
#include "stack/core/drops.hpp"
#include "stack/core/l4_output.hpp"
#include "stack/core/packet.hpp"
#include "stack/core/packet_view.hpp"
#include "stack/core/time.hpp"
#include "stack/core/token_bucket.hpp"
#include "stack/iface/arp_cache.hpp"
#include "stack/iface/ipv6_reassembly.hpp"
#include "stack/iface/neighbor_cache.hpp"
#include "stack/iface/reassembly.hpp"
#include "stack/iface/tx_path_cache.hpp"
#include "stack/udp/udp_table.hpp"
#include "stack/wire/icmp.hpp"
#include "stack/wire/icmpv6.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/ipv6.hpp"

namespace ws {

namespace ipsec {
class EspLayer;
class EspSeq;
enum class OpenError;
struct Opened;
struct OutboundSa;
struct InboundSa;
}  // namespace ipsec

// A neighbour whose link address is configured, not resolved (ARP or RFC 4861): used at
// once, never aged, and not moved by what the link says.
struct StaticNeighbor {
  IpAddr ip;
  MacAddr mac;
};

struct InterfaceConfig {
  std::string name;
  MacAddr mac;
  Ipv4Cidr address;
  std::optional<Ipv4Addr> gateway;
  uint32_t mtu = 1500;
  bool software_checksums = false;  // ignore the port's checksum offloads
  // IPv6: an interface with no IPv6 address and no gateway6 does not run IPv6.
  std::vector<Ipv6Cidr> addresses6;
  std::optional<Ipv6Addr> gateway6;
  // The link-local address (stack/iface/link_local.hpp); none: modified EUI-64 of `mac`.
  std::optional<Ipv6Addr> link_local;
  uint32_t dad_transmits = 1;  // RFC 4862 DupAddrDetectTransmits; 0: addresses used at once
  // Router advertisements (RFC 4861 6.3.4) teach the default router (used without
  // gateway6) and the link MTU; router solicitations are sent at start (6.3.7).
  bool accept_ra = false;
  // IPv6 ones are used only on an interface that runs IPv6.
  std::vector<StaticNeighbor> static_neighbors;
  bool runs_ipv6() const { return !addresses6.empty() || gateway6.has_value(); }
};

// Per-interface counters: plain integers of the owning core, like StackCounters.
struct InterfaceCounters {
  // TCP and UDP datagrams dropped for a bad checksum (tcp_bad_checksum and
  // udp_bad_checksum, attributed to the interface they arrived on). The data plane
  // reads them to explain failures such as a local peer's unfinished checksums.
  uint64_t l4_checksum_errors = 0;
};

// A transport above IPv4 and IPv6 (TCP): gets validated datagrams, ICMP errors that quote
// its segments, and a poll for its timers.
class TransportHandler {
 public:
  virtual ~TransportHandler() = default;
  // `segment` may span several buffers (a chained frame); it is valid for the call.
  virtual void input(IpAddr src, IpAddr dst, const PacketView& segment, bool checksum_verified,
                     Instant now) = 0;
  // ICMP destination unreachable / fragmentation needed (RFC 1191) quoting one of
  // our datagrams: `quoted` starts at the quoted IPv4 header.
  // True when the quoted segment belongs to a connection (checked further there).
  virtual bool icmp_error(uint8_t type, uint8_t code, uint16_t next_hop_mtu,
                          std::span<const uint8_t> quoted, Instant now) = 0;
  virtual Instant poll(Instant now) = 0;
  // A receive burst begins and ends (Stack::begin_rx_burst, end_rx_burst): output the
  // transport held for the burst leaves at its end.
  virtual void begin_rx_burst() {}
  virtual void end_rx_burst(Instant) {}
};

struct StackConfig {
  ArpConfig arp;
  // ICMP error messages per second (token bucket; RFC 1812 4.3.2.8 rate limiting).
  uint32_t icmp_errors_per_second = 1000;
  uint32_t icmp_error_burst = 100;
  uint8_t default_ttl = 64;
  // IPv4 fragment reassembly: table bounds and timeout (RFC 1122 3.3.2).
  ReassemblyConfig reassembly;
  // ICMP time exceeded, "fragment reassembly time exceeded" (RFC 792), for a
  // datagram that expires after its first fragment arrived.
  bool icmp_reassembly_time_exceeded = true;
  // IPv6 neighbour discovery (RFC 4861 section 10 constants and cache bounds).
  NeighborConfig ndp;
  // Called when duplicate address detection finds one of an interface's IPv6
  // addresses in use by another node (RFC 4862 5.4.5): the address is not used.
  std::function<void(uint16_t iface, const Ipv6Addr& addr)> on_duplicate_address;
};

class Stack final : public L4Output {
 public:
  explicit Stack(const StackConfig& cfg = {});
  ~Stack() override;
  // Gives every frame the stack holds (waiting for ARP, or for an ESP burst) back to its
  // interface's PacketIo. The destructor does it too; an owner whose PacketIo objects
  // die before the stack calls this first.
  void release_buffers();
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;

  // Adds an interface; frames for it carry RxMeta::port == the returned index.
  uint16_t add_interface(const InterfaceConfig& cfg, PacketIo& io);
  size_t interface_count() const { return ifaces_.size(); }
  const InterfaceConfig& interface_config(uint16_t i) const;
  const InterfaceCounters& interface_counters(uint16_t i) const;

  // Announces our addresses (gratuitous ARP, RFC 5227 section 3).
  void start(Instant now);

  // One received Ethernet frame, in one buffer or several (a chain). The stack
  // does not keep `frame` or its segments after returning.
  void receive(const PacketView& frame, const RxMeta& meta, Instant now);
  void receive(std::span<const uint8_t> frame, const RxMeta& meta, Instant now) {
    receive(PacketView(frame), meta, now);
  }

  // Runs timers (ARP, transports); returns the earliest next deadline.
  Instant poll(Instant now);
  // Sends frames held for a burst (CBC + HMAC ESP frames sealed together); the data plane
  // calls it before flushing its ports. poll() flushes too.
  void flush(Instant now);

  UdpSocket* udp_bind(uint16_t port, UdpSocket::Handler handler) {
    return udp_.bind(port, std::move(handler));
  }
  UdpSocket* udp_bind(uint16_t port, UdpSocket::BurstHandler handler) {
    return udp_.bind(port, std::move(handler));
  }
  // A receive burst: from begin_rx_burst() to end_rx_burst() the caller keeps every frame
  // it passes to receive() whole and its buffers owned (PacketView::set_owner), so the
  // datagrams to sockets with a burst handler go to them in runs, one call per run
  // (UdpTable::deliver), at the latest at end_rx_burst().
  // TCP holds the ACKs of in-order data for the burst's end (TcpStack::begin_rx_burst).
  void begin_rx_burst() {
    rx_burst_open_ = true;
    if (tcp_ != nullptr) tcp_->begin_rx_burst();
  }
  void end_rx_burst(Instant now) {
    rx_burst_open_ = false;
    udp_.flush_burst(now);
    if (tcp_ != nullptr) tcp_->end_rx_burst(now);
  }
  void udp_unbind(uint16_t port) { udp_.unbind(port); }
  bool udp_restrict_family(uint16_t port, AddrFamily f) { return udp_.restrict_family(port, f); }
  void set_tcp(TransportHandler* tcp) { tcp_ = tcp; }
  // IPsec ESP (stack/ipsec/esp_layer.hpp) for this core; nullptr: none. Not owned: it must
  // outlive the stack (the stack gives back frames it holds for a burst when destroyed).
  void set_ipsec(ipsec::EspLayer* esp) { esp_ = esp; }

  const StackCounters& counters() const { return counters_; }
  StackCounters& counters() { return counters_; }
  const DropCounters& drops() const { return drops_; }
  DropCounters& drops() { return drops_; }
  size_t arp_entries() const;
  size_t ndp_entries() const;

  // An interface's IPv6 addresses (link-local first) and their duplicate address
  // detection state; empty when the interface does not run IPv6.
  enum class Ipv6AddrState : uint8_t { kTentative, kPreferred, kDuplicate };
  std::vector<std::pair<Ipv6Cidr, Ipv6AddrState>> ipv6_addresses(uint16_t iface) const;
  // The state of one of them without building the list; none when `a` is not one.
  std::optional<Ipv6AddrState> ipv6_address_state(uint16_t iface, const Ipv6Addr& a) const;
  // The default router off-link IPv6 traffic goes through now: gateway6, else the first
  // live one learned from router advertisements; none when there is neither.
  std::optional<Ipv6Addr> ipv6_router(uint16_t iface, Instant now) const;
  // The router learned from advertisements that ipv6_router() picks without gateway6
  // (always in fe80::/64); none when no live one is known.
  std::optional<Ipv6Addr> ipv6_learned_router(uint16_t iface, Instant now) const;
  // The IPv6 link MTU: the port's, or lower when a router advertisement said so.
  uint32_t ipv6_mtu(uint16_t iface) const;

  // L4Output: IPv4 here (ipv4_output.cpp), IPv6 destinations go to the *6 steps below.
  bool begin(IpAddr src, IpAddr dst, uint8_t proto, uint32_t l4_len, L4Frame& out) override;
  bool begin_gather(IpAddr src, IpAddr dst, uint8_t proto, uint32_t header_len, uint32_t l4_len,
                    L4Frame& out) override;
  void commit(L4Frame& f, Instant now) override;
  void abort(L4Frame& f) override;
  uint32_t mtu_to(IpAddr dst) const override;
  IpAddr source_for(IpAddr dst) const override;
  bool source_pending(IpAddr dst) const override;
  uint32_t free_buffers_to(IpAddr dst) const override;
  TsoLimits tso_limits_to(IpAddr dst) const override;
  bool begin_tso(IpAddr src, IpAddr dst, uint32_t header_len, uint32_t l4_len,
                 uint32_t segment_payload, L4Frame& out) override;
  bool send_datagram(IpAddr src, IpAddr dst, uint8_t proto, std::span<const uint8_t> head,
                     std::span<const uint8_t> body, bool dont_fragment, Instant now) override;
  // IPv4 only (ipv4_burst.cpp).
  std::optional<size_t> send_udp_burst(IpAddr dst, std::span<const L4Datagram> d,
                                       Instant now) override;

  const Reassembler& reassembly() const { return reasm_; }
  const Ipv6Reassembler& reassembly6() const { return reasm6_; }

 private:
  struct Interface;
  struct Ipv6Iface;
  struct Route {
    uint16_t iface = 0;
    Ipv4Addr next_hop;
    bool broadcast = false;
  };

  void arp_input(Interface& ifc, std::span<const uint8_t> body, Instant now);

  // IPv6 (ipv6_input.cpp, icmpv6.cpp, ndp.cpp, ipv6_output.cpp).
  // Ethernet multicast addresses IPv6 listens on: all-nodes and our solicited-node groups.
  bool ipv6_wants(const Interface& ifc, const MacAddr& dst) const;
  void ipv6_input(Interface& ifc, const PacketView& pkt, Instant now);
  // After the fixed-header checks: the extension headers, reassembly, and the upper
  // layer. `reassembled`: `pkt` came out of reassembly (a second Fragment header in it
  // is refused).
  void ipv6_deliver(Interface& ifc, const PacketView& pkt, const wire::Ipv6View& ip,
                    bool to_tentative, bool reassembled, Instant now);
  // `to_tentative`: the destination is an address still under DAD (only NDP is taken).
  void icmpv6_input(Interface& ifc, const wire::Ipv6View& ip, const PacketView& msg,
                    bool to_tentative, Instant now);
  // Neighbour solicitation and advertisement (checked, then handed to the two below).
  void ndp_input(Interface& ifc, const wire::Ipv6View& ip, std::span<const uint8_t> msg,
                 Instant now);
  void ndp_solicit_input(Interface& ifc, const wire::Ipv6View& ip, const Ipv6Addr& target,
                         const wire::NdpOptions& opts, Instant now);
  void ndp_advert_input(Interface& ifc, const wire::Ipv6View& ip, uint32_t flags,
                        const Ipv6Addr& target, const wire::NdpOptions& opts, Instant now);
  // Router discovery (router_discovery.cpp): advertisements checked (RFC 4861 6.1.2) and
  // learned (6.3.4); solicitations at start (6.3.7), then the routers' expiry.
  void ra_input(Interface& ifc, const wire::Ipv6View& ip, std::span<const uint8_t> msg,
                Instant now);
  void ra_learn(Interface& ifc, const Ipv6Addr& router, std::span<const uint8_t> msg,
                const wire::NdpOptions& opts, Instant now);
  Instant poll_routers(Interface& ifc, Instant now);
  void send_router_solicit(Interface& ifc, Instant now);
  // MLDv2 (mld.cpp): reports of the solicited-node groups at start and when queried.
  void start_mld(Interface& ifc, Instant now);
  Instant poll_mld(Interface& ifc, Instant now);
  void send_mld_report(Interface& ifc);
  void mld_query_input(Interface& ifc, const wire::Ipv6View& ip, Instant now);
  // Neighbour solicitation for `target`: DAD (from ::), to its solicited-node group, or
  // unicast to `unicast` (a probe).
  void send_solicit(Interface& ifc, const Ipv6Addr& target, bool dad,
                    const std::optional<MacAddr>& unicast);
  void send_advert(Interface& ifc, const Ipv6Addr& target, const Ipv6Addr& to, bool solicited,
                   Instant now);
  // An ICMPv6 message `head` + `body` (checksum already in head) from `src` to `dst`.
  bool send_icmpv6(Interface& ifc, const Ipv6Addr& src, const Ipv6Addr& dst, uint8_t hop_limit,
                   std::span<const uint8_t> head, const PacketView& body, Instant now);
  // An ICMPv6 message too large for the link, sent in fragments (RFC 8200 4.5).
  bool send_icmpv6_fragments(Interface& ifc, const wire::Ipv6Repr& r, std::span<const uint8_t> head,
                             const PacketView& body, Instant now);
  // ICMPv6 error quoting `offending` (an IPv6 packet we received), rate limited (RFC 4443 2.4).
  void send_icmpv6_error(Interface& ifc, uint8_t type, uint8_t code, uint32_t word,
                         const PacketView& offending, Instant now);
  // Hands an ICMPv6 error (`msg` from its type on, quoting one of our packets), received
  // or raised here, to the flow it concerns; false when it concerns none.
  bool icmpv6_error_to_flow(const PacketView& msg, uint8_t type, uint8_t code, Instant now);
  // A frame that waited for a neighbour that never answered (RFC 4861 7.2.2: reported to
  // the upper layer as destination unreachable, address unreachable).
  void neighbor_unreachable(TxBuf& frame);
  // RFC 8200 4.5: time exceeded (reassembly) for a packet that expired with its first
  // fragment (`first`: the rebuilt unfragmentable part and that fragment's data).
  void reassembly_expired6(std::span<uint8_t> first, Instant now);
  // A unicast next hop and the link address a frame went to.
  struct ResolvedHop6 {
    Ipv6Addr ip;
    MacAddr mac;
  };
  // Sends a built IPv6 frame (Ethernet source and type written) towards its next hop;
  // returns that hop when the frame went out at once to a unicast neighbour.
  std::optional<ResolvedHop6> send_routed6(Interface& ifc, TxBuf& buf, const Ipv6Addr& dst,
                                           Instant now);
  // The preferred address of `ifc` to send to `dst` from (RFC 6724 reduced to scope
  // and prefix match); none while every candidate is tentative or duplicate.
  std::optional<Ipv6Addr> source_for6(const Interface& ifc, const Ipv6Addr& dst) const;
  void start_ipv6(Interface& ifc, Instant now);
  // IPv6 output for the transports (ipv6_output.cpp): the interface that reaches `dst`
  // (on-link prefix first, then the first default router), frames, commit, and datagrams
  // cut into fragments (RFC 8200 4.5).
  Interface* route6(const Ipv6Addr& dst) const;
  bool begin_frame6(const IpAddr& src, const Ipv6Addr& dst, uint8_t proto, int32_t header_len,
                    uint32_t l4_len, L4Frame& out);
  void commit6(L4Frame& f, Instant now);
  // commit6() of a frame whose destination has a path kept: false when the path no longer
  // holds (nothing written then).
  bool commit_on_path6(Interface& ifc, L4Frame& f, Instant now);
  // Keeps the path `f` took to `hop`.
  void keep_path6(const Interface& ifc, const L4Frame& f, const ResolvedHop6& hop, Instant now);
  bool send_datagram6(const IpAddr& src, const Ipv6Addr& dst, uint8_t proto,
                      std::span<const uint8_t> head, std::span<const uint8_t> body, Instant now);
  // One IPv6 packet `head` + `body` as described by `r` (payload_len set), in fragments
  // when it exceeds the link MTU.
  bool send_ipv6(Interface& ifc, const wire::Ipv6Repr& r, std::span<const uint8_t> head,
                 const PacketView& body, Instant now);
  // TCP and UDP over IPv6 (ipv6_input.cpp): `l4` is the upper-layer packet; false when
  // `proto` is neither or TCP is not attached.
  bool l4_input6(Interface& ifc, const PacketView& pkt, const wire::Ipv6View& ip, uint8_t proto,
                 const PacketView& l4, Instant now);
  // DAD steps and the neighbour caches; returns the next deadline.
  Instant poll_ipv6(Instant now);
  void address_duplicate(Interface& ifc, const Ipv6Addr& addr);
  void send_arp(Interface& ifc, uint16_t op, const MacAddr& eth_dst, const MacAddr& tha,
                Ipv4Addr tpa);
  // `link_broadcast`: the frame was sent to the Ethernet broadcast address.
  void ipv4_input(Interface& ifc, const PacketView& pkt, const RxMeta& meta, bool link_broadcast,
                  Instant now);
  // Steps after the fragment check: counts and hands `whole` (a complete IPv4
  // datagram; `ip` its validated header, read in place or pulled up) to ICMP,
  // UDP or TCP.
  void ipv4_deliver(Interface& ifc, const PacketView& whole, const wire::Ipv4View& ip,
                    const RxMeta& meta, bool no_icmp_error, bool to_broadcast, Instant now);
  void icmp_input(Interface& ifc, Ipv4Addr src, Ipv4Addr dst, const PacketView& msg, Instant now);
  void icmp_echo(Ipv4Addr src, Ipv4Addr dst, std::span<const uint8_t> hdr, const PacketView& msg,
                 Instant now);
  void udp_input(const PacketView& ip_packet, size_t ip_hl, Ipv4Addr src, Ipv4Addr dst,
                 bool to_broadcast, RxMeta::Cksum l4_csum, Instant now);
  // UDP of either family from the UDP header on: checks, then the socket. False when
  // no socket is bound (counted; the caller answers port unreachable).
  bool udp_receive(const PacketView& seg, IpAddr src, IpAddr dst, RxMeta::Cksum l4_csum,
                   Instant now);
  // ICMP error quoting `offending` (an IPv4 packet we received), rate limited.
  void send_icmp_error(uint8_t type, uint8_t code, uint32_t rest, const PacketView& offending,
                       Instant now);
  // `v` as one span: in place when contiguous, else copied into rx_linear_
  // (counted); for the consumers that need contiguous bytes (reassembly, UDP
  // payloads, ICMP echo data). Valid until the next call.
  std::span<const uint8_t> linearize(const PacketView& v);
  // The route to `dst` (interface.hpp, inline).
  std::optional<Route> route(Ipv4Addr dst) const;
  bool is_local(Ipv4Addr a, bool& broadcast) const;
  uint64_t l4_checksum_drops() const {
    return drops_.get(DropReason::kTcpBadChecksum) + drops_.get(DropReason::kUdpBadChecksum);
  }
  void transmit_resolved(Interface& ifc, TxBuf& buf, const MacAddr& dst);
  // Counts and queues a frame whose Ethernet header is complete.
  void transmit_counted(Interface& ifc, TxBuf& buf);
  // A frame a kept path laid out whole (tx_path_cache.hpp): padded, out of any staging area,
  // counted under `family_out` (ipv4_out or ipv6_out) and queued.
  void transmit_on_path(Interface& ifc, TxBuf& b, uint16_t l3_len, uint64_t& family_out);
  // Sends a built frame (Ethernet source and type written) to `dst`'s next hop,
  // now or behind ARP resolution.
  void send_routed(Interface& ifc, TxBuf& buf, Ipv4Addr dst, Instant now);
  // send_routed() with the route already known: to `hop`, or broadcast.
  void send_to_hop(Interface& ifc, TxBuf& buf, Ipv4Addr hop, bool broadcast, Instant now);
  // send_to_hop() for a next hop not resolved: the frame waits for ARP (or is dropped when
  // its queue is full).
  void hold_for_arp(Interface& ifc, TxBuf& buf, Ipv4Addr hop, Instant now);
  // commit() of an IPv4 frame whose destination has a path kept: false when the path no
  // longer holds (nothing written then).
  bool commit_on_path(Interface& ifc, L4Frame& f, Instant now);
  // Keeps the path `f` took to a next hop resolved to `mac`.
  void keep_path(const Interface& ifc, const L4Frame& f, const MacAddr& mac, Instant now);
  // begin() and begin_gather(): `header_len` < 0 asks for one contiguous l4.
  bool begin_frame(IpAddr src, IpAddr dst, uint8_t proto, int32_t header_len, uint32_t l4_len,
                   L4Frame& out);
  // Points out.l4 / out.more at the L4 part of a freshly allocated out.buf.
  static void lay_out_l4(L4Frame& out, uint32_t l4_len, uint32_t l4_off = 14 + 20);
  // The frame of one L4 packet of either family behind Ethernet and an `l3_len`-byte IP
  // header: checked against the MTU, allocated whole (`header_len` < 0) or gathered
  // behind `header_len` bytes of L4 header, laid out (lay_out_l4) and sent from `ifc`.
  // A frame too long or no buffer is counted and false.
  bool alloc_l4_frame(Interface& ifc, uint32_t l3_len, int32_t header_len, uint32_t l4_len,
                      L4Frame& out);
  // The L4 checksum of a committed frame: by the port where allowed and offered.
  void fill_l4_checksum(const Interface& ifc, L4Frame& f, bool tso, bool allow_offload);
  // Pads to the Ethernet minimum and writes the Ethernet header of a built frame.
  void finish_frame(const Interface& ifc, TxBuf& b);
  // Fragments and sends one IPv4 datagram (the body of send_datagram without ESP).
  bool send_fragments(Ipv4Addr src, Ipv4Addr dst, uint8_t proto, std::span<const uint8_t> head,
                      std::span<const uint8_t> body, bool dont_fragment, Instant now);

  // ESP (ipv4_esp.cpp): frames laid out for an SA, sealed on commit; ESP input; the
  // inbound policy check; datagrams sealed whole, then fragmented.
  bool begin_esp_frame(ipsec::OutboundSa& sa, Ipv4Addr src, Ipv4Addr dst, uint8_t proto,
                       uint32_t l4_len, L4Frame& out);
  void commit_esp(L4Frame& f, Instant now);
  // Seals the held CBC frames as one burst of jobs and sends them.
  void flush_esp(Instant now);
  // Gives frames held for a burst back to their pools (a stack torn down before flush()).
  void release_held_esp();
  uint32_t esp_mtu(const ipsec::OutboundSa& sa, Ipv4Addr dst) const;
  void esp_input(Interface& ifc, const PacketView& whole, const wire::Ipv4View& ip,
                 const RxMeta& meta, Instant now);
  // A CBC + HMAC packet that passed the window check: copied into the receive burst, opened
  // with the others by flush_esp_rx() (at flush() or when the burst is full).
  void hold_esp_rx(Interface& ifc, const PacketView& whole, size_t hl, const PacketView& esp,
                   ipsec::InboundSa& sa, ipsec::EspSeq seq, const RxMeta& meta, Instant now);
  void flush_esp_rx(Instant now);
  // After opening (`err`): counts a failure, or accepts `seq` into the window and hands the
  // inner packet (payload at e + o.payload_off; `outer`: the received IPv4 header) to IPv4.
  void esp_deliver(Interface& ifc, ipsec::InboundSa& sa, ipsec::EspSeq seq, ipsec::OpenError err,
                   const ipsec::Opened& o, uint8_t* e, std::span<const uint8_t> outer,
                   const RxMeta& meta, Instant now);
  bool esp_policy_allows(const PacketView& whole, const wire::Ipv4View& ip);
  // ICMP quoting one of our ESP packets: "fragmentation needed" lowers the SA's path MTU.
  void esp_frag_needed(const wire::IcmpView& icmp, const wire::Ipv4View& quoted_ip,
                       std::span<const uint8_t> quoted);
  bool send_datagram_esp(ipsec::OutboundSa& sa, Ipv4Addr src, Ipv4Addr dst, uint8_t proto,
                         std::span<const uint8_t> head, std::span<const uint8_t> body, Instant now);

  StackConfig cfg_;
  std::vector<std::unique_ptr<Interface>> ifaces_;
  StackCounters counters_;
  DropCounters drops_;
  UdpTable udp_;
  bool rx_burst_open_ = false;  // begin_rx_burst()
  TransportHandler* tcp_ = nullptr;
  ipsec::EspLayer* esp_ = nullptr;
  // While a decrypted packet is delivered: the SA it arrived through (for the policy check).
  ipsec::InboundSa* rx_sa_ = nullptr;
  uint16_t next_ip_id_ = 1;
  // IPv4 unicast destinations' routes, next-hop MACs and headers (ipv4_output.cpp).
  TxPathCache paths_;
  // IPv6 unicast destinations' interfaces, sources, next-hop MACs and headers
  // (ipv6_output.cpp); emptied when an address or a default router changes.
  TxPathCache6 paths6_;
  TokenBucket icmp_errors_;  // ICMP errors sent (as Linux's icmp_ratelimit)
  Instant arp_deadline_ = Instant::never();
  Instant v6_deadline_ = Instant::never();
  TokenBucket icmp6_errors_;  // ICMPv6 errors sent (RFC 4443 2.4 (f))
  Ipv6Reassembler reasm6_;
  uint32_t next_frag_id6_ = 1;  // Identification of the IPv6 packets we fragment
  Reassembler reasm_;
  // Room for one IPv4 datagram, for linearize(); allocated with the stack.
  std::vector<uint8_t> rx_linear_;
};

}  // namespace ws
