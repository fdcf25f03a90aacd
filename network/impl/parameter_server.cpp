#include "network/impl/parameter_server.hpp"

#include <algorithm>

#include "network/impl/parameter_server_spec.hpp"
#include "network/impl/spec_json.hpp"

namespace dtsim {

ParameterServerSpec parse_parameter_server_spec(JsonObject& m) {
  ParameterServerSpec s;
  s.servers = static_cast<int>(m.integer_or("servers", s.servers, 0, 1 << 20));
  s.latency_s = m.number_or("latency_s", s.latency_s, 0.0, 1.0);
  s.bandwidth_efficiency = share_or(m, "bandwidth_efficiency", s.bandwidth_efficiency);
  m.reject_unknown();
  return s;
}

CollectiveEstimate ParameterServerAlgorithm::estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const {
  if (!supports(op)) unsupported(op);
  if (p.gpus <= 1 || bytes <= 0) return {0, name(), "", 0};
  const ParameterServerSpec& ps = c.collectives.parameter_server;
  const double servers = ps.servers > 0 ? ps.servers : p.nodes;
  const double beta_server = 1.0 / (c.inter.nic_bandwidth_Bps / c.inter.oversubscription * ps.bandwidth_efficiency);
  const double one_way = bytes * std::max(p.gpus / servers, 1.0) * beta_server + ps.latency_s;
  return {op == CollectiveOp::AllReduce ? 2 * one_way : one_way, name(), "", 0};
}

DTSIM_REGISTER(CollectiveAlgorithmRegistry, {"ps", 9, "parameter server: workers push gradients to server ranks and pull the sum back over RPC (collectives.parameter_server)",
                                             []() -> std::unique_ptr<CollectiveAlgorithm> { return std::make_unique<ParameterServerAlgorithm>(); }})

}  // namespace dtsim
