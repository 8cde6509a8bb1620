// The stack's TCP settings (tcp::TcpConfig) from the config's tcp: section. The data plane
// adds what is its own: the ISN secret and how a core picks local ports.
#pragma once

#include "control/config/config.hpp"
#include "stack/tcp/api.hpp"

namespace ws::config {

tcp::TcpConfig to_stack_tcp(const TcpConfig& t);

}  // namespace ws::config
