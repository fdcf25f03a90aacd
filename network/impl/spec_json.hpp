#pragma once
// Reading the collective libraries' specifications (collectives.nccl, .mpi, .parameter_server of a
// cluster file): what their parsers share.
#include <string>

#include "core/json_util.hpp"

namespace dtsim {

// A share of a link's rate, in (0, 1]; `fallback` where the key is absent.
double share_or(JsonObject& o, const std::string& key, double fallback);

}  // namespace dtsim
