#pragma once
// A cluster: its GPU, how GPUs sit in nodes, the links inside and between nodes, and the framework
// that drives training (host launch costs and gradient bucketing). Schema: docs/cluster-format.md.
#include <cstdint>
#include <string>

#include "common/json_util.hpp"
#include "roofline/gpu_spec.hpp"

namespace dtsim {

struct IntraNodeFabric {
  std::string kind;           // nvswitch, nvlink, pcie
  double bandwidth_Bps = 0;   // per GPU, one direction
  double latency_s = 0;       // per ring step over this fabric
};

struct InterNodeNetwork {
  int nics_per_node = 0;
  double nic_bandwidth_Bps = 0;  // per NIC, one direction
  double latency_s = 0;          // per ring step that crosses the network
  double oversubscription = 1;   // >= 1: the fabric's share each node gets is 1/oversubscription
  // Bandwidth one node can push into the fabric.
  double node_bandwidth_Bps() const { return nics_per_node * nic_bandwidth_Bps / oversubscription; }
};

// Costs of the collective library itself, independent of the links.
struct CollectiveLibrary {
  double base_latency_s = 0;  // per collective call (NCCL's baseLat)
};

struct FrameworkSpec {
  std::string name;
  double launch_overhead_s = 0;     // host time to issue one kernel
  double iteration_overhead_s = 0;  // fixed host time per iteration (loop, zero_grad, reducer)
  int64_t first_bucket_bytes = 0;   // DDP: the first gradient bucket is smaller so it starts early
  int64_t bucket_bytes = 0;
  bool overlap = true;              // all-reduce buckets during the backward pass
};

struct ClusterSpec {
  std::string name;
  std::string file;
  GpuSpec gpu;
  int gpus_per_node = 0;
  int nodes = 0;
  IntraNodeFabric intra;
  InterNodeNetwork inter;
  CollectiveLibrary collectives;
  FrameworkSpec framework;
  int64_t capacity_gpus() const { return static_cast<int64_t>(gpus_per_node) * nodes; }
};

ClusterSpec parse_cluster(const Json& doc, const std::string& what);
// A preset name (configs/clusters/NAME.json) or a path to a .json file.
ClusterSpec load_cluster(const std::string& name_or_path);
std::vector<std::string> cluster_presets();

}  // namespace dtsim
