#pragma once
// NCCL's tuning model as tables (the structure of NVIDIA/nccl src/graph/tuning.cc): a latency and
// a bandwidth for every (algorithm, protocol), from which NCCL picks the pair with the least
// `latency + bytes / bandwidth`. Indices: algorithm {tree, ring}, protocol {LL, LL128, Simple},
// hardware {NVLink, PCIe, network}. Defaults are NCCL's own constants (docs/cluster-format.md);
// cluster files override them (collectives.nccl), `dtsim calibrate` fits them to measured runs.
// The formulas that read these tables are in nccl.hpp beside this file.
#include <array>
#include <string>

#include "core/json_util.hpp"

namespace dtsim {

enum NcclAlgo { kNcclTree = 0, kNcclRing = 1, kNcclAlgos = 2 };
enum NcclProto { kNcclLL = 0, kNcclLL128 = 1, kNcclSimple = 2, kNcclProtos = 3 };
enum NcclHw { kHwNvlink = 0, kHwPcie = 1, kHwNet = 2, kNcclHws = 3 };
const char* nccl_algo_name(int a);   // "tree", "ring"
const char* nccl_proto_name(int p);  // "LL", "LL128", "Simple"

// NVLink SHARP (NVLS): the NVSwitch reduces in the switch, so an all-reduce on one node moves each
// byte once each way; across nodes NVLSTree runs NVLS inside each node and a tree between them. NCCL
// runs them on NVSwitch nodes of Hopper and later where the driver supports multicast
// (NCCL_NVLS_ENABLE, on by default); off here unless the cluster file says so.
struct NcclSwitchReduction {
  bool enabled = false;
  double efficiency = 0.85;      // share of the NVLink rate NVLS moves (tuning.cc nvlsEfficiency, Hopper)
  int channels = 16;             // NVLS channels
  double latency_s = 25e-6;      // per call inside the node (hwLatencies NVLink, NVLS / NVLSTree Simple)
  double net_latency_s = 20.9e-6;  // per tree level across nodes (hwLatencies NET, NVLSTree Simple)
  // NVLSTree's ceiling per channel by job size {1 node (unused), 2 nodes, more} (perChMaxNVLSTreeBws, Hopper).
  std::array<double, 3> tree_max_per_channel_Bps{0, 57.7e9, 45.5e9};
};
// PAT (parallel aggregated trees) for all-gather and reduce-scatter with one GPU per node: a
// logarithmic latency, three quarters of the ring's Simple bandwidth.
struct NcclPat {
  bool enabled = true;
  double bandwidth_factor = 0.75;
  double base_latency_s = 8e-6;
  double per_rank_latency_s = 2.8e-6;  // the linear part NCCL's model keeps
  double net_latency_divisor = 3.5;    // per lg N step: the network hop latency / this
};

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
  NcclSwitchReduction nvls;
  NcclPat pat;
  Json calibration;  // what `dtsim calibrate` recorded, carried along
};
NcclTuning default_nccl_tuning();
// A collectives.nccl object over the defaults (InputError naming `what` and the JSON path).
NcclTuning parse_nccl_tuning(const Json& j, const std::string& what, const std::string& path);
// The same, for an object the caller has opened (a cluster file's collectives.nccl).
NcclTuning parse_nccl_tuning(JsonObject& n);

}  // namespace dtsim
