#include "network/collective.hpp"

#include <utility>

#include "core/error.hpp"
#include "network/topology.hpp"

namespace dtsim {

namespace {
const std::pair<CollectiveOp, const char*> kOps[] = {{CollectiveOp::AllReduce, "allreduce"},
                                                     {CollectiveOp::ReduceScatter, "reducescatter"},
                                                     {CollectiveOp::AllGather, "allgather"},
                                                     {CollectiveOp::Broadcast, "broadcast"},
                                                     {CollectiveOp::Reduce, "reduce"}};
}

CollectiveOp parse_collective_op(const std::string& s) {
  for (const auto& [op, name] : kOps)
    if (s == name) return op;
  throw InputError("--op", "unknown collective '" + s + "' (allreduce, reducescatter, allgather, broadcast, reduce)");
}

const char* collective_op_name(CollectiveOp op) {
  for (const auto& [o, name] : kOps)
    if (o == op) return name;
  return "?";
}

std::vector<CollectiveOp> all_collective_ops() {
  std::vector<CollectiveOp> v;
  for (const auto& [op, name] : kOps) v.push_back(op);
  return v;
}

void CollectiveAlgorithm::unsupported(CollectiveOp op) const {
  std::string ok;
  for (CollectiveOp o : all_collective_ops())
    if (supports(o)) ok += (ok.empty() ? "" : ", ") + std::string(collective_op_name(o));
  throw InputError("--algo", name() + " does not implement " + collective_op_name(op) + " (it implements " + ok + ")");
}

Placement place(const ClusterSpec& c, int64_t gpus) {
  if (gpus < 1) throw InputError("--gpus", "must be at least 1, got " + std::to_string(gpus));
  if (gpus > kMaxGpus) throw InputError("--gpus", "must be at most " + std::to_string(kMaxGpus) + ", got " + std::to_string(gpus));
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
  if (p <= 1) return op == CollectiveOp::Broadcast || op == CollectiveOp::Reduce ? 1.0 : 0.0;
  switch (op) {
    case CollectiveOp::AllReduce: return 2.0 * (p - 1) / p;
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather: return static_cast<double>(p - 1) / p;
    case CollectiveOp::Broadcast:
    case CollectiveOp::Reduce: return 1.0;
  }
  return 1.0;
}

std::string comm_bottleneck(const Placement& p, const ClusterSpec& c) {
  if (p.gpus <= 1) return "none";
  return textbook_costs(p, c).bottleneck;
}

std::vector<std::string> collective_algorithm_names() { return CollectiveAlgorithmRegistry::get().names(); }

std::unique_ptr<CollectiveAlgorithm> make_collective_algorithm(const std::string& name) {
  if (auto a = CollectiveAlgorithmRegistry::get().make(name)) return a;
  throw InputError("--algo", "unknown algorithm '" + name + "' (" + CollectiveAlgorithmRegistry::get().joined_names() + ")");
}

}  // namespace dtsim
