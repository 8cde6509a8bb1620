// The reader's side of a capture: takes the capture segment for itself (one capture at a
// time per data plane), publishes a request, drains the cores' rings in order of arrival
// per core, and withdraws the request at the end. Knows nothing of pcapng: records go to
// a callback.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "control/capture/layout.hpp"
#include "control/capture/ring.hpp"
#include "control/capture/segment.hpp"

namespace ws::capture {

class Session {
 public:
  ~Session();

  // Maps the segment at `path` and takes its lock. False with `error` (no data plane,
  // another capture running, permissions).
  bool open(const std::string& path, std::string& error);
  const Header& header() const { return *segment_.header(); }
  // Index of the port called `name`, or -1.
  int port_index(std::string_view name) const;

  // Publishes `request`: from here the cores copy what it selects. Records left by an
  // earlier request are discarded first.
  void arm(const Request& request);
  // Hands every record available now to `sink`; returns how many. Also beats, so the data
  // plane knows the reader is alive.
  using Sink = std::function<void(const Record&, const uint8_t* bytes)>;
  size_t drain(const Sink& sink);
  // Withdraws the request; records already in the rings can still be drained.
  void disarm();
  // Copies dropped (rings full) since arm(), over every core.
  uint64_t dropped_copies() const;
  // The data plane that created the segment still runs.
  bool dataplane_alive() const;
  // The data plane withdrew our request: this reader did not drain for longer than the
  // data plane's reader timeout (a blocked output, a stopped process).
  bool withdrawn() const;

 private:
  Segment segment_;
  std::vector<RingReader> readers_;
  std::vector<uint64_t> dropped_at_arm_;
  bool armed_ = false;
};

}  // namespace ws::capture
