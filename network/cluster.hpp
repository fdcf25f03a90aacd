#pragma once
// A cluster: its GPU, how GPUs sit in nodes, the links inside and between nodes, and the framework
// that drives training (host launch costs and gradient bucketing). Schema: docs/cluster-format.md.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "hardware/gpu_spec.hpp"

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

// NCCL's tuning model as tables (the structure of NVIDIA/nccl src/graph/tuning.cc): a latency and
// a bandwidth for every (algorithm, protocol), from which NCCL picks the pair with the least
// `latency + bytes / bandwidth`. Indices: algorithm {tree, ring}, protocol {LL, LL128, Simple},
// hardware {NVLink, PCIe, network}. Defaults are NCCL's own constants (docs/cluster-format.md);
// cluster files override them, `dtsim calibrate` fits them to measured runs.
enum NcclAlgo { kNcclTree = 0, kNcclRing = 1, kNcclAlgos = 2 };
enum NcclProto { kNcclLL = 0, kNcclLL128 = 1, kNcclSimple = 2, kNcclProtos = 3 };
enum NcclHw { kHwNvlink = 0, kHwPcie = 1, kHwNet = 2, kNcclHws = 3 };
const char* nccl_algo_name(int a);   // "tree", "ring"
const char* nccl_proto_name(int p);  // "LL", "LL128", "Simple"

struct NcclTuning {
  using PerProto = std::array<double, kNcclProtos>;
  using PerAlgoProto = std::array<PerProto, kNcclAlgos>;
  int channels = 16;  // comm->nChannels: parallel rings/trees, one thread block each
  // Share of a link's line rate that NCCL's Simple protocol moves (nvlink, pcie, net).
  std::array<double, kNcclHws> link_efficiency{};
  PerAlgoProto base_latency_s{};                      // per call
  std::array<PerAlgoProto, kNcclHws> hop_latency_s{};  // per step over that hardware
  std::array<double, kNcclAlgos> algo_bandwidth{};     // tree pays for its split thread model
  PerAlgoProto proto_bandwidth{};                      // LL sends 8-byte flag+data words, LL128 120 of 128
  // Ceilings NCCL measured per GPU generation, by job size {1 node, 2 nodes, more}: LL's bus
  // bandwidth, and per channel ring LL128, tree LL128 and tree (any protocol).
  using PerNodes = std::array<double, 3>;
  PerNodes ll_max_bus_bandwidth_Bps{};
  PerNodes ring_ll128_max_per_channel_Bps{};
  PerNodes tree_ll128_max_per_channel_Bps{};
  PerNodes tree_max_per_channel_Bps{};
  PerProto threads{};                 // threads per channel (block size)
  PerProto thread_threshold_bytes{};  // a channel is used only if each thread gets this many bytes
  std::array<std::array<double, 23>, kNcclProtos> tree_correction{};  // bandwidth factor, 64 B << i
  double net_overhead_s = 0;                         // host proxy cost per network step
  double ring_simple_multinode_latency_factor = 1;   // ring plateau across nodes
  std::array<std::array<bool, kNcclProtos>, kNcclAlgos> enabled{};
  // NCCL chooses by the tables above; what the chosen protocol then costs may differ (its tables
  // are one model for many machines). Measured corrections of latency and bandwidth per protocol,
  // and of bandwidth per collective (by CollectiveOp: allreduce, reducescatter, allgather,
  // broadcast, reduce); 1 where nothing was measured.
  PerProto cost_latency_scale{1, 1, 1};
  PerProto cost_bandwidth_scale{1, 1, 1};
  std::array<double, 5> op_bandwidth{1, 1, 1, 1, 1};
  Json calibration;  // what `dtsim calibrate` recorded, carried along
};
NcclTuning default_nccl_tuning();
// A collectives.nccl object over the defaults (InputError naming `what` and the JSON path).
NcclTuning parse_nccl_tuning(const Json& j, const std::string& what, const std::string& path);

// CUDA-aware MPI (MVAPICH2-GDR-like): MPI's algorithms with its own, lower, per-message latency.
// Unset fields keep these orders of magnitude (docs/cluster-format.md says where they come from).
struct MpiSpec {
  double base_latency_s = 1.0e-6;     // per call
  double latency_s = 1.5e-6;          // per message between GPUs of a node
  double latency_inter_s = 3.0e-6;    // per message across the network
  double bandwidth_efficiency = 0.8;  // share of a link's rate its pipelined copies reach
};

// A gRPC-style parameter server: workers push gradients to S server ranks and pull the sum back.
struct ParameterServerSpec {
  int servers = 0;                    // 0: one per node of the job
  double latency_s = 5.0e-5;          // per push or pull (an RPC)
  double bandwidth_efficiency = 0.6;  // share of a server's NIC rate that the RPC stack reaches
};

// Costs of the collective library itself, independent of the links.
struct CollectiveLibrary {
  double base_latency_s = 0;  // per collective call (NCCL's baseLat), for the textbook algorithms
  NcclTuning nccl;
  MpiSpec mpi;
  ParameterServerSpec parameter_server;
};

struct FrameworkSpec {
  std::string name;
  double launch_overhead_s = 0;     // host time to issue one kernel
  double iteration_overhead_s = 0;  // fixed host time per iteration (loop, zero_grad, reducer)
  int64_t first_bucket_bytes = 0;   // DDP: the first gradient bucket is smaller so it starts early
  int64_t bucket_bytes = 0;
  bool overlap = true;              // all-reduce buckets during the backward pass
  // Where the framework runs its own kernel instead of the measured library one (PyTorch's native
  // bf16 batchnorm and pooling): predictor key ("batchnorm/fwd/bf16", "pool/bwd/fp32/max") -> time ratio.
  std::map<std::string, double> kernel_time_factors;
  // Measured host time per kernel by key (sim/schedule.hpp framework_kernel_key); kernels
  // without an entry cost launch_overhead_s.
  std::map<std::string, double> host_cost_s;
  // DDP without gradient_as_bucket_view: each parameter's gradient is copied into its bucket and
  // scaled by 1/world on the compute stream as it becomes ready (the harness reduces in place).
  bool ddp_gradient_copy = false;
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
  // What one GPU-hour costs to rent (the file's price_per_gpu_hour, any currency; dtsim plan), and
  // where that figure comes from (price_source); unset where the file gives none.
  std::optional<double> price_per_gpu_hour;
  std::string price_source;
  int64_t capacity_gpus() const { return static_cast<int64_t>(gpus_per_node) * nodes; }
};

ClusterSpec parse_cluster(const Json& doc, const std::string& what);
// A preset name (configs/clusters/NAME.json) or a path to a .json file.
ClusterSpec load_cluster(const std::string& name_or_path);
std::string cluster_path(const std::string& name_or_path);  // the file a name resolves to
std::vector<std::string> cluster_presets();

}  // namespace dtsim
