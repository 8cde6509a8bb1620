// UDP sockets of one core (RFC 768): a socket is a local port and a receive
// handler. Demultiplexing is an array lookup by destination port.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "stack/core/addr.hpp"
#include "stack/core/drops.hpp"
#include "stack/core/l4_output.hpp"
#include "stack/core/time.hpp"

namespace ws {

struct UdpDatagram {
  Endpoint src;  // the sender
  Endpoint dst;  // us (the address may be a broadcast)
  std::span<const uint8_t> payload;
};

class UdpTable;

class UdpSocket {
 public:
  // Called for every datagram to the socket's port; `payload` is valid only
  // during the call.
  using Handler = std::function<void(UdpSocket&, const UdpDatagram&, Instant now)>;
  // Called with the datagrams of a receive burst to the socket's port, in arrival order,
  // one call for many (UdpTable::deliver); the payloads are valid only during the call.
  using BurstHandler = std::function<void(UdpSocket&, std::span<const UdpDatagram>, Instant now)>;

  uint16_t port() const { return port_; }
  // Sends one datagram from this socket's port. False when it could not be sent
  // (no route, no buffer, too large): the reason has been counted.
  bool send_to(const Endpoint& dst, std::span<const uint8_t> payload, Instant now);
  // Sends datagrams to one destination in bursts: the route, the next-hop lookup and the
  // buffer allocation are done once per burst, not per datagram. Returns how many were
  // sent, from the front; the rest could not be (no buffer, no route: counted).
  size_t send_burst(const Endpoint& dst, std::span<const std::span<const uint8_t>> payloads,
                    Instant now);

 private:
  friend class UdpTable;
  UdpSocket(UdpTable& table, uint16_t port, Handler h, BurstHandler b)
      : table_(table), port_(port), handler_(std::move(h)), burst_(std::move(b)) {}
  UdpTable& table_;
  uint16_t port_;
  Handler handler_;     // one call per datagram, or
  BurstHandler burst_;  // one call per run of datagrams
  AddrFamily family_ = AddrFamily::kAny;
};

class UdpTable {
 public:
  UdpTable(L4Output& out, DropCounters& drops, FamilyCount& udp_out_counter);
  UdpTable(const UdpTable&) = delete;
  UdpTable& operator=(const UdpTable&) = delete;

  // nullptr when the port is taken.
  UdpSocket* bind(uint16_t port, UdpSocket::Handler handler);
  UdpSocket* bind(uint16_t port, UdpSocket::BurstHandler handler);
  void unbind(uint16_t port);
  // Datagrams to `port` from the other family are refused as to a closed port (kAny:
  // both). False when nothing is bound there.
  bool restrict_family(uint16_t port, AddrFamily f);

  // Delivers a validated datagram; false when no socket is bound to dst.port. For a
  // socket with a burst handler, a datagram whose payload stays valid until
  // flush_burst() (`held`: the data plane frees a receive burst's frames only after it)
  // waits there, with the others of its run to the same socket, up to kBurst; any other
  // is handed over at once, after those waiting (arrival order is kept).
  bool deliver(const UdpDatagram& d, Instant now, bool held = false);
  // Hands the waiting datagrams to their socket: the end of a receive burst.
  void flush_burst(Instant now);
  static constexpr size_t kBurst = 64;

  bool send(uint16_t src_port, const Endpoint& dst, std::span<const uint8_t> payload, Instant now);
  // UdpSocket::send_burst.
  size_t send_burst(uint16_t src_port, const Endpoint& dst,
                    std::span<const std::span<const uint8_t>> payloads, Instant now);

 private:
  // The slow path of send() for datagrams larger than the MTU.
  bool send_fragmented(uint16_t src_port, const Endpoint& dst, std::span<const uint8_t> payload,
                       Instant now);

  UdpSocket* add(uint16_t port, UdpSocket::Handler handler, UdpSocket::BurstHandler burst);

  L4Output& out_;
  DropCounters& drops_;
  std::array<UdpDatagram, kBurst> burst_{};  // held for burst_sock_ (deliver)
  size_t burst_n_ = 0;
  UdpSocket* burst_sock_ = nullptr;
  FamilyCount& udp_out_;  // by family_index of the destination
  std::vector<std::unique_ptr<UdpSocket>> sockets_;
  std::array<int16_t, 65536> index_{};  // port -> position in sockets_ + 1; 0 = none
};

}  // namespace ws
