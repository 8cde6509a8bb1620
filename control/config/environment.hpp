// `${NAME}` in config values, expanded from the process environment before the sections
// are read, so that one file serves every node of a fleet: the SR-IOV device plugin, for
// one, hands a pod its VF's PCI address in PCIDEVICE_<RESOURCE> variables.
//
//   ${NAME}           the variable's value; an unset variable is an error
//   ${NAME:-default}  the value, or `default` when NAME is unset or empty
//   $$                a literal '$'
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <string_view>

#include "control/config/reader.hpp"

namespace ws::config::detail {

// The expansion of `text`, or nullopt with `error` saying what is wrong.
std::optional<std::string> expand_environment(std::string_view text, std::string& error);

// Expands every scalar under `node` in place; each error carries its value's position.
void expand_environment(Diagnostics& d, YAML::Node node);

}  // namespace ws::config::detail
