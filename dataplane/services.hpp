// Builds a core's service instances from the config.
#pragma once

#include <memory>
#include <string>

#include "control/config/config.hpp"
#include "dataplane/client_reports.hpp"
#include "stack/apps/service.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws::dp {

// nullptr with `why` when the kind/protocol is not available in this build. A client
// runs `share` of its connections, message count and rate.
std::unique_ptr<Service> make_service(const config::ServiceConfig& sc, const config::Config& cfg,
                                      tcp::TcpStack& tcp, std::string& why, ClientShare share = {});

}  // namespace ws::dp
