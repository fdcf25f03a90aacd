#include "network/collective.hpp"

#include <functional>
#include <utility>

#include "common/error.hpp"
#include "network/impl/ring.hpp"

namespace dtsim {

CollectiveOp parse_collective_op(const std::string& s) {
  if (s == "allreduce") return CollectiveOp::AllReduce;
  if (s == "reducescatter") return CollectiveOp::ReduceScatter;
  if (s == "allgather") return CollectiveOp::AllGather;
  if (s == "broadcast") return CollectiveOp::Broadcast;
  throw InputError("--op", "unknown collective '" + s + "' (allreduce, reducescatter, allgather, broadcast)");
}

const char* collective_op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduce: return "allreduce";
    case CollectiveOp::ReduceScatter: return "reducescatter";
    case CollectiveOp::AllGather: return "allgather";
    case CollectiveOp::Broadcast: return "broadcast";
  }
  return "?";
}

Placement place(const ClusterSpec& c, int64_t gpus) {
  if (gpus < 1) throw InputError("--gpus", "must be at least 1, got " + std::to_string(gpus));
  if (gpus > c.capacity_gpus())
    throw InputError("--gpus", std::to_string(gpus) + " GPUs exceed cluster '" + c.name + "' (" + std::to_string(c.nodes) + " nodes x " +
                                   std::to_string(c.gpus_per_node) + " GPUs = " + std::to_string(c.capacity_gpus()) + ")");
  Placement p;
  p.gpus = static_cast<int>(gpus);
  p.gpus_per_node = c.gpus_per_node;
  p.nodes = static_cast<int>((gpus + c.gpus_per_node - 1) / c.gpus_per_node);
  return p;
}

double bus_bandwidth_factor(CollectiveOp op, int p) {
  if (p <= 1) return op == CollectiveOp::Broadcast ? 1.0 : 0.0;
  switch (op) {
    case CollectiveOp::AllReduce: return 2.0 * (p - 1) / p;
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather: return static_cast<double>(p - 1) / p;
    case CollectiveOp::Broadcast: return 1.0;
  }
  return 1.0;
}

namespace {
using Factory = std::function<std::unique_ptr<CollectiveAlgorithm>()>;
const std::vector<std::pair<std::string, Factory>>& registry() {
  static const std::vector<std::pair<std::string, Factory>> r = {
      {"ring", [] { return std::make_unique<RingAlgorithm>(); }},
  };
  return r;
}
}  // namespace

std::vector<std::string> collective_algorithm_names() {
  std::vector<std::string> n;
  for (const auto& [name, f] : registry()) n.push_back(name);
  return n;
}

std::unique_ptr<CollectiveAlgorithm> make_collective_algorithm(const std::string& name) {
  for (const auto& [n, f] : registry())
    if (n == name) return f();
  std::string known;
  for (const auto& n : collective_algorithm_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError("--algo", "unknown algorithm '" + name + "' (" + known + ")");
}

}  // namespace dtsim
