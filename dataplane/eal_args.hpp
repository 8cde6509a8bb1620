// EAL command line built from the config (dataplane.*, ports[].device / pci).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "control/config/config.hpp"

namespace ws::dp {

std::vector<std::string> build_eal_args(const config::Config& cfg, const std::string& argv0);

// The ethdev name a port will have: the vdev name before the first comma, or the
// PCI address.
std::string port_device_name(const config::PortConfig& p);

// The vdev string handed to EAL for a port: the configured one, and for net_memif a
// `bsize=` that holds a whole frame when the operator gave none.
//
// Why: DPDK 22.11's memif copy-mode TX (eth_memif_tx) resets the flags of every
// descriptor it moves on to, but not of a packet's first one. A packet that fits in
// one buffer therefore keeps the MEMIF_DESC_FLAG_NEXT a longer packet left in that
// ring slot a lap earlier; the receiver (eth_memif_rx) chains the following slot into
// it, merging two frames, and when that slot lies past the producer's head it runs
// beyond the head, after which it replays stale descriptors forever (seen: a TCP
// transfer at MTU 9000 stalls while the receiver takes ~110 k stale frames a second).
// With one buffer per frame no descriptor ever carries NEXT.
std::string vdev_args(const config::PortConfig& p);

// For net_af_packet: the kernel's RX ring sized to about 8 MiB (`framecnt=`) when the
// operator gave none. DPDK's default of 512 frames (about 740 KB of full-size segments)
// overflows when a fast local sender runs several TCP streams into the data plane: the
// streams' windows together exceed it, the kernel drops at the ring, and the sender spends
// its time in loss recovery (iperf3 -P 4 fell to a fifth of one stream).
//
// memif buffer size that holds a whole frame of this MTU (at least memif's 2048).
uint32_t memif_buffer_size(uint32_t mtu);

// af_packet ring frames for ~8 MiB of frames of `framesz` bytes, a whole number of
// `blocksz` blocks, and at least DPDK's default of 512.
uint32_t af_packet_frame_count(uint32_t framesz, uint32_t blocksz);

// Frames the port's receive ring holds per queue: af_packet's socket ring (`framecnt`,
// as vdev_args sets it), else `rx_descriptors`.
uint32_t rx_ring_frames(const config::PortConfig& p);

// The value of `key=` in a device string ("net_x0,a=1,key=2"), or 0 when absent or
// not a number.
uint32_t devarg_u32(std::string_view device, std::string_view key);

}  // namespace ws::dp
