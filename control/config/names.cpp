// YAML spellings of the enumerations, shared by describe(), the CLI and metrics labels.
#include "control/config/config.hpp"

namespace ws::config {

std::string_view to_string(IdleMode v) {
  switch (v) {
    case IdleMode::adaptive:
      return "adaptive";
    case IdleMode::poll:
      return "poll";
  }
  return "?";
}

std::string_view to_string(Offloads v) {
  switch (v) {
    case Offloads::automatic:
      return "auto";
    case Offloads::software:
      return "software";
  }
  return "?";
}

std::string_view to_string(FrameBuffers v) {
  switch (v) {
    case FrameBuffers::automatic:
      return "auto";
    case FrameBuffers::whole:
      return "whole";
    case FrameBuffers::chained:
      return "chained";
  }
  return "?";
}

std::string_view to_string(L4Checksums v) {
  switch (v) {
    case L4Checksums::on:
      return "on";
    case L4Checksums::off:
      return "off";
  }
  return "?";
}

std::string_view to_string(Tso v) {
  switch (v) {
    case Tso::automatic:
      return "auto";
    case Tso::off:
      return "off";
  }
  return "?";
}

std::string_view to_string(LinkLocal v) {
  switch (v) {
    case LinkLocal::stable:
      return "stable";
    case LinkLocal::eui64:
      return "eui64";
  }
  return "?";
}

std::string_view to_string(ServiceKind v) {
  switch (v) {
    case ServiceKind::echo:
      return "echo";
    case ServiceKind::sink:
      return "sink";
    case ServiceKind::source:
      return "source";
    case ServiceKind::ping:
      return "ping";
    case ServiceKind::iperf3:
      return "iperf3";
    case ServiceKind::http:
    case ServiceKind::http_client:
      return "http";
  }
  return "?";
}

std::string_view to_string(Protocol v) {
  switch (v) {
    case Protocol::tcp:
      return "tcp";
    case Protocol::udp:
      return "udp";
  }
  return "?";
}

std::string_view to_string(Framing v) {
  switch (v) {
    case Framing::length32:
      return "length32";
    case Framing::none:
      return "none";
  }
  return "?";
}

std::string_view to_string(Congestion v) {
  switch (v) {
    case Congestion::cubic:
      return "cubic";
    case Congestion::newreno:
      return "newreno";
  }
  return "?";
}

std::string_view to_string(PolicyProtocol v) {
  switch (v) {
    case PolicyProtocol::any:
      return "any";
    case PolicyProtocol::tcp:
      return "tcp";
    case PolicyProtocol::udp:
      return "udp";
    case PolicyProtocol::icmp:
      return "icmp";
  }
  return "?";
}

std::string_view to_string(PolicyAction v) {
  switch (v) {
    case PolicyAction::protect:
      return "protect";
    case PolicyAction::bypass:
      return "bypass";
    case PolicyAction::discard:
      return "discard";
  }
  return "?";
}

}  // namespace ws::config
