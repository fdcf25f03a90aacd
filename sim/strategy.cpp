#include "sim/strategy.hpp"

#include "core/error.hpp"
#include "workload/model_json.hpp"

namespace dtsim {

std::vector<std::string> strategy_names() { return StrategyRegistry::get().names(); }

std::unique_ptr<Strategy> make_strategy(const std::string& name) {
  if (auto s = StrategyRegistry::get().make(name)) return s;
  throw InputError("--strategy", "unknown strategy '" + name + "' (" + StrategyRegistry::get().joined_names() + ")");
}

const Json& strategy_defaults() {
  static const Json doc = load_json_file(config_dir() + "/strategies.json");
  return doc;
}

double strategy_default(const std::string& strategy, const std::string& key) {
  const Json& d = strategy_defaults();
  const std::string where = config_dir() + "/strategies.json";
  if (!d.contains(strategy) || !d[strategy].is_object()) throw InputError(where, "$." + strategy + " is missing");
  const Json& o = d[strategy];
  if (!o.contains(key) || !o[key].is_number()) throw InputError(where, "$." + strategy + "." + key + " must be a number");
  return o[key].get<double>();
}

double rails_allreduce_s(double bytes, const Placement& where, const ClusterSpec& c, const CollectiveAlgorithm& algo) {
  if (where.nodes <= 1 || bytes <= 0) return 0;
  const int g = where.local_gpus();
  // g rails at once share all of the node's NICs: each gets nics x nic_bandwidth / g. Priced as one
  // NIC of that bandwidth, since a one-GPU-per-node job on its own would use a single NIC.
  ClusterSpec shared = c;
  shared.inter.nic_bandwidth_Bps = c.inter.nic_bandwidth_Bps * c.inter.nics_per_node / g;
  shared.inter.nics_per_node = 1;
  return algo.time_s(CollectiveOp::AllReduce, bytes / g, one_per_node_placement(where), shared);
}

StrategyParams tau_only(const StrategyParams& given) {
  StrategyParams p;
  p.tau = given.tau;
  return p;
}

int tau_or_default(const StrategyParams& given, const std::string& section) {
  if (given.tau < 0) throw InputError("--tau", "must be >= 1");
  const int tau = given.tau > 0 ? given.tau : static_cast<int>(strategy_default(section, "tau"));
  if (tau < 1) throw InputError("configs/strategies.json", "$." + section + ".tau must be >= 1");
  return tau;
}

}  // namespace dtsim
