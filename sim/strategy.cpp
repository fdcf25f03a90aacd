#include "sim/strategy.hpp"

#include <functional>
#include <utility>

#include "core/error.hpp"
#include "workload/model_json.hpp"
#include "sim/strategies/data_parallel.hpp"
#include "sim/strategies/daso.hpp"
#include "sim/strategies/easgd.hpp"
#include "sim/strategies/grid.hpp"
#include "sim/strategies/local_sgd.hpp"

namespace dtsim {

namespace {
using Factory = std::function<std::unique_ptr<Strategy>()>;
const std::vector<std::pair<std::string, Factory>>& registry() {
  static const std::vector<std::pair<std::string, Factory>> r = {
      {"dp", [] { return std::make_unique<DataParallelStrategy>(DataParallelStrategy::Flat); }},
      {"hierarchical", [] { return std::make_unique<DataParallelStrategy>(DataParallelStrategy::Hierarchical); }},
      {"daso", [] { return std::make_unique<DasoStrategy>(); }},
      {"easgd-sync", [] { return std::make_unique<EasgdStrategy>(EasgdStrategy::Sync); }},
      {"easgd-async", [] { return std::make_unique<EasgdStrategy>(EasgdStrategy::Async); }},
      {"measgd-async", [] { return std::make_unique<EasgdStrategy>(EasgdStrategy::AsyncMomentum); }},
      {"hogwild-easgd", [] { return std::make_unique<EasgdStrategy>(EasgdStrategy::Hogwild); }},
      {"ps", [] { return std::make_unique<DataParallelStrategy>(DataParallelStrategy::ParameterServer); }},
      {"grid", [] { return std::make_unique<GridStrategy>(); }},
      {"hierarchical-leader", [] { return std::make_unique<DataParallelStrategy>(DataParallelStrategy::HierarchicalLeader); }},
      {"local-sgd", [] { return std::make_unique<LocalSgdStrategy>(); }},
  };
  return r;
}
}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> n;
  for (const auto& [name, f] : registry()) n.push_back(name);
  return n;
}

std::unique_ptr<Strategy> make_strategy(const std::string& name) {
  for (const auto& [n, f] : registry())
    if (n == name) return f();
  std::string known;
  for (const auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError("--strategy", "unknown strategy '" + name + "' (" + known + ")");
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

}  // namespace dtsim
