#pragma once
// Collective cost models (Ramulator-like: this small interface, one implementation per algorithm in
// impl/, chosen by name). An algorithm prices one collective of n bytes over a job's GPUs from the
// links the job spans (docs/design.md §4, Collectives); `auto` is NCCL's own choice of algorithm
// and protocol.
#include <memory>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "hardware/placement.hpp"
#include "network/cluster.hpp"

namespace dtsim {

// Bytes follow nccl-tests: all-reduce, broadcast and reduce count the buffer; reduce-scatter its
// input (p pieces); all-gather its output (p pieces).
enum class CollectiveOp { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce };
CollectiveOp parse_collective_op(const std::string& s);  // allreduce, reducescatter, allgather, broadcast, reduce
const char* collective_op_name(CollectiveOp op);
std::vector<CollectiveOp> all_collective_ops();

// A job of `gpus` on the cluster's nodes (hardware/placement.hpp).
Placement place(const ClusterSpec& c, int64_t gpus);  // InputError("--gpus") beyond capacity or kMaxGpus

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

// What one collective costs and how it ran.
struct CollectiveEstimate {
  double time_s = 0;
  std::string algo;      // the algorithm that ran: for `auto`, NCCL's choice (ring, tree)
  std::string protocol;  // NCCL's protocol (LL, LL128, Simple); empty where none applies
  int channels = 0;      // NCCL channels (thread blocks) used; 0 where none apply
};

class CollectiveAlgorithm {
 public:
  virtual ~CollectiveAlgorithm() = default;
  virtual std::string name() const = 0;
  virtual bool supports(CollectiveOp) const { return true; }
  // InputError("--algo") for an operation the algorithm does not implement.
  virtual CollectiveEstimate estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const = 0;
  double time_s(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const { return estimate(op, bytes, p, c).time_s; }

 protected:
  [[noreturn]] void unsupported(CollectiveOp op) const;
};

// Collective algorithms by name; each registers itself in its impl/ file (DTSIM_REGISTER), ranked
// in the order users know: auto, nccl-ring, nccl-tree, ring, tree, recursive-doubling, rabenseifner,
// hierarchical, mpi, ps.
using CollectiveAlgorithmRegistry = Registry<CollectiveAlgorithm>;
// InputError("--algo") for a name nobody registered.
std::unique_ptr<CollectiveAlgorithm> make_collective_algorithm(const std::string& name);
std::vector<std::string> collective_algorithm_names();

// nccl-tests' bus bandwidth: algorithm bandwidth times the share of data each rank's link carries
// (all-reduce 2(p-1)/p, reduce-scatter and all-gather (p-1)/p, broadcast and reduce 1).
double bus_bandwidth_factor(CollectiveOp op, int p);

// The slower of the links a job's collectives cross in the textbook alpha-beta model, in words
// ("intra-node nvswitch", "inter-node network"; "none" on one GPU). What limits a prediction's
// communication is decided by what a faster link changes (Prediction::comm_bottleneck): NCCL, for
// one, moves less than a link's rate, so a network faster than NVLink need not leave NVLink the limit.
std::string comm_bottleneck(const Placement& p, const ClusterSpec& c);

}  // namespace dtsim
