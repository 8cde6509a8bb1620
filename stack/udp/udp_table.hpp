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

  uint16_t port() const { return port_; }
  // Sends one datagram from this socket's port. False when it could not be sent
  // (no route, no buffer, too large): the reason has been counted.
  bool send_to(const Endpoint& dst, std::span<const uint8_t> payload, Instant now);

 private:
  friend class UdpTable;
  UdpSocket(UdpTable& table, uint16_t port, Handler h)
      : table_(table), port_(port), handler_(std::move(h)) {}
  UdpTable& table_;
  uint16_t port_;
  Handler handler_;
  AddrFamily family_ = AddrFamily::kAny;
};

class UdpTable {
 public:
  UdpTable(L4Output& out, DropCounters& drops, uint64_t& udp_out_counter);
  UdpTable(const UdpTable&) = delete;
  UdpTable& operator=(const UdpTable&) = delete;

  // nullptr when the port is taken.
  UdpSocket* bind(uint16_t port, UdpSocket::Handler handler);
  void unbind(uint16_t port);
  // Datagrams to `port` from the other family are refused as to a closed port (kAny:
  // both). False when nothing is bound there.
  bool restrict_family(uint16_t port, AddrFamily f);

  // Delivers a validated datagram; false when no socket is bound to dst.port.
  bool deliver(const UdpDatagram& d, Instant now);

  bool send(uint16_t src_port, const Endpoint& dst, std::span<const uint8_t> payload, Instant now);

 private:
  // The slow path of send() for datagrams larger than the MTU.
  bool send_fragmented(uint16_t src_port, const Endpoint& dst, std::span<const uint8_t> payload,
                       Instant now);

  L4Output& out_;
  DropCounters& drops_;
  uint64_t& udp_out_;
  std::vector<std::unique_ptr<UdpSocket>> sockets_;
  std::array<int16_t, 65536> index_{};  // port -> position in sockets_ + 1; 0 = none
};

}  // namespace ws
