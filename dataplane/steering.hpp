// Software RSS: hands received frames to the core that owns their flow.
//
// A port that spreads flows over its queues by a hash the data plane cannot read or
// program (net_tap's kernel queue selection), or that has no hash at all (memif, a single
// queue served by several cores), may deliver a connection's packets to a core other than
// the one holding the connection. Each core computes the owner of every frame it receives
// on such a port (FlowOwner: a function of the flow's tuple that every core knows) and
// passes frames it does not own to the owner over a ring. There is one single-producer,
// single-consumer rte_ring per ordered pair of cores, so the fast path takes no lock and
// no ring has two writers or two readers.
#pragma once

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <cstdint>
#include <string>
#include <vector>

#include "control/config/config.hpp"
#include "dataplane/port.hpp"
#include "stack/steer/flow_owner.hpp"

namespace ws::dp {

class Steering {
 public:
  static constexpr uint32_t kRingSize = 1024;

  Steering() = default;
  Steering(const Steering&) = delete;
  Steering& operator=(const Steering&) = delete;
  ~Steering() { shutdown(); }

  // Decides which ports are steered in software and, when any is and there are several
  // cores, creates the rings. False with `error` when a ring cannot be created.
  bool init(const config::Config& cfg, const std::vector<PortInfo>& ports, std::string& error);
  // Frees the rings and any frame left in them (after the cores stopped).
  void shutdown();

  uint32_t cores() const { return owner_.cores(); }
  const FlowOwner& owner() const { return owner_; }
  // Frames received on this port go to the owner of their flow.
  bool steered(uint16_t port_id) const {
    return port_id < steered_.size() && steered_[port_id] != 0;
  }
  bool active() const { return !rings_.empty(); }
  rte_ring* ring(uint32_t from, uint32_t to) const { return rings_[from * cores() + to]; }

 private:
  FlowOwner owner_;
  std::vector<uint8_t> steered_;  // by port id
  std::vector<rte_ring*> rings_;  // [from * cores + to]; null on the diagonal
};

// Pins each IPsec SA's peers to one core (see steering.cpp), and the core an SA runs on.
void pin_ipsec(const config::IpsecConfig& c, FlowOwner& owner);
uint32_t sa_owner(const config::SaConfig& sa, const FlowOwner& owner);

// Whether the port's own RSS returns each flow to its owner: its redirection table could
// be read, so connections we open pick local ports by it (RssPortSelector).
bool hardware_steered(const PortInfo& p);

// One core's side of the hand-over: frames staged per destination core during a burst,
// enqueued together, and the frames other cores handed to this one.
class SteerOutbox {
 public:
  static constexpr uint16_t kBurst = 32;

  SteerOutbox(const Steering& s, uint32_t core);
  bool enabled() const { return enabled_; }
  // Keeps in `mbufs` (in order) the frames this core owns and stages the others; an ARP
  // reply stays and a copy goes to every other core. Returns the number kept.
  uint16_t sort(rte_mbuf** mbufs, uint16_t n);
  // Enqueues what was staged. Frames a full ring refuses (and ARP copies that found no
  // mbuf) are freed and counted for refused().
  void flush();
  // Frames refused since the last call, for the caller's drop counter.
  uint32_t refused() {
    const uint32_t r = refused_;
    refused_ = 0;
    return r;
  }
  // Up to `max` frames other cores handed to this one.
  uint16_t take(rte_mbuf** out, uint16_t max);

  uint64_t handed_out() const { return out_; }
  uint64_t handed_in() const { return in_; }

 private:
  void stage(uint32_t to, rte_mbuf* m);
  const Steering& s_;
  uint32_t core_;
  bool enabled_;
  uint32_t next_from_ = 0;  // the ring take() starts with, for fairness
  std::vector<std::vector<rte_mbuf*>> staged_;
  uint64_t out_ = 0;
  uint64_t in_ = 0;
  uint32_t refused_ = 0;
};

}  // namespace ws::dp
