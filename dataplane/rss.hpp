// Reads what a started port's RSS does (key, redirection table, hashed fields) into a
// RssTable, so that connections a core opens can pick local ports that the NIC steers
// back to that core (stack/steer/toeplitz.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "stack/steer/toeplitz.hpp"

namespace ws::dp {

// Fills `out` from the device. On devices that cannot report their key or table,
// `out.enabled` stays false and `note` says so (the caller falls back to per-core
// port ranges).
void rss_read(uint16_t port_id, RssTable& out, std::string& note);

}  // namespace ws::dp
