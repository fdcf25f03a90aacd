#pragma once
// The parameter server's constants (collectives.parameter_server of a cluster file); its formulas
// are in parameter_server.hpp beside this file.
#include "core/json_util.hpp"

namespace dtsim {

// A gRPC-style parameter server: workers push gradients to S server ranks and pull the sum back.
struct ParameterServerSpec {
  int servers = 0;                    // 0: one per node of the job
  double latency_s = 5.0e-5;          // per push or pull (an RPC)
  double bandwidth_efficiency = 0.6;  // share of a server's NIC rate that the RPC stack reaches
};
// A collectives.parameter_server object over the defaults above.
ParameterServerSpec parse_parameter_server_spec(JsonObject& m);

}  // namespace dtsim
