#pragma once
// Collective cost models. An algorithm prices one collective of n bytes over a job's GPUs; the
// alpha-beta-gamma parameters come from the links the job spans (DESIGN §4).
#include <memory>
#include <string>
#include <vector>

#include "network/cluster.hpp"

namespace dtsim {

enum class CollectiveOp { AllReduce, ReduceScatter, AllGather, Broadcast };
CollectiveOp parse_collective_op(const std::string& s);  // allreduce, reducescatter, allgather, broadcast
const char* collective_op_name(CollectiveOp op);

// Where a job's GPUs sit: ceil(gpus / gpus_per_node) nodes, filled in order.
struct Placement {
  int gpus = 1;
  int nodes = 1;
  int gpus_per_node = 1;
};
Placement place(const ClusterSpec& c, int64_t gpus);  // InputError("--gpus") beyond capacity

// Latency: a fixed cost per call plus alpha per step, where steps that cross the network cost
// alpha_inter (NCCL's tuning model adds hop latencies the same way); beta: seconds per byte on the
// slowest link the algorithm uses; gamma: seconds per byte reduced.
struct LinkCost {
  double base_s = 0;
  double alpha_s = 0;
  double alpha_inter_s = 0;
  double inter_steps_per_pass = 0;  // network crossings of one pass around the ring

  double beta_s_per_byte = 0;
  double gamma_s_per_byte = 0;
  std::string bottleneck;  // which link limits bandwidth, in words
};

class CollectiveAlgorithm {
 public:
  virtual ~CollectiveAlgorithm() = default;
  virtual std::string name() const = 0;
  virtual double time_s(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const = 0;
};

std::unique_ptr<CollectiveAlgorithm> make_collective_algorithm(const std::string& name);
std::vector<std::string> collective_algorithm_names();

// nccl-tests' bus bandwidth: algorithm bandwidth times the share of data each rank's link carries
// (all-reduce 2(p-1)/p, reduce-scatter and all-gather (p-1)/p, broadcast 1).
double bus_bandwidth_factor(CollectiveOp op, int p);

}  // namespace dtsim
