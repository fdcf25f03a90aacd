#pragma once
// A cluster: its GPU, how GPUs sit in nodes, the links inside and between nodes, and the framework
// that drives training (host launch costs and gradient bucketing). Schema: docs/cluster-format.md.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "core/shared_map.hpp"
#include "hardware/gpu_spec.hpp"
#include "network/impl/mpi_spec.hpp"
#include "network/impl/nccl/tuning.hpp"
#include "network/impl/parameter_server_spec.hpp"

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

// Costs of the collective library itself, independent of the links. Each algorithm family owns its
// constants and their defaults beside its formulas (network/impl/).
struct CollectiveLibrary {
  double base_latency_s = 0;  // per collective call (NCCL's baseLat), for the textbook algorithms
  NcclTuning nccl;
  MpiSpec mpi;
  ParameterServerSpec parameter_server;
};

// torch.optim's foreach optimizers (the default on GPUs) run a step as a few passes over the FP32
// parameter lists, each a series of multi_tensor_apply launches (sim/multi_tensor.hpp prices them).
struct MultiTensorPass {
  int max_tensors = 0;          // tensors one launch takes for this pass's number of lists
  double bytes_per_param = 0;   // read and written per parameter element
};
// A framework table by key (kernel keys to ratios or seconds): shared by the copies of a cluster.
using KeyTable = SharedMap<std::string, double>;

struct MultiTensorOptimizer {
  int64_t chunk_elements = 0;   // elements one thread block takes of a tensor (kChunkSize)
  int max_blocks = 0;           // blocks (chunks) one launch takes
  double launch_s = 0;          // GPU time of a launch beyond streaming its bytes
  double bandwidth_fraction = 0;  // of the GPU's datasheet memory bandwidth a pass streams at
  SharedMap<std::string, std::vector<MultiTensorPass>> passes;  // by optimizer: sgd, adamw, adam
};

// torch.compile's generated pooling kernels (sim/compiled_pool.hpp prices them): the SMs' issue
// cost per element, and the share of the memory bandwidth they stream at where bytes bound them.
struct CompiledPoolCost {
  double window_cycles = 0;  // SM cycles per window element (forward: output x window; backward: input x candidates)
  double input_cycles = 0;   // SM cycles per input element
};
struct CompiledPooling {
  double bandwidth_fraction = 0;  // 0: not modelled (the pooling's kernels priced as the compute model does)
  SharedMap<std::string, CompiledPoolCost> cost;  // by "max/fwd", "max/bwd", "avg/fwd", "avg/bwd"
};

// What the program that drives training costs the host (and its own kernels cost the GPU): the part
// of a cluster's framework section that a framework profile (configs/frameworks, sim/framework.hpp)
// replaces.
struct FrameworkHostCosts {
  double launch_overhead_s = 0;     // host time to issue one kernel
  double iteration_overhead_s = 0;  // fixed host time per iteration (loop, zero_grad, reducer)
  // The product of the launch-cost what-ifs applied to these host costs (sim/whatif.hpp): the two
  // times above are scaled by it, the tables' entries are read times it.
  double host_cost_scale = 1;
  // The host runs ahead of the GPU across iterations (nothing in the step waits for the GPU: PyTorch's
  // eager loop without .item() or synchronize), so in the steady state the step takes the longer of
  // the host's issue time and the GPU's own timeline; otherwise each step starts with both idle and
  // the GPU waits for every kernel the host has not issued yet.
  bool host_runs_ahead = false;
  // Where the framework runs its own kernel instead of the measured library one (PyTorch's native
  // bf16 batchnorm and pooling): predictor key ("batchnorm/fwd/bf16", "pool/bwd/fp32/max") -> time ratio.
  KeyTable kernel_time_factors;
  // The same for kernels over channels_last (NHWC) tensors, which PyTorch runs with other kernels
  // (batchnorm, pooling, elementwise); a key missing here takes no factor, never the NCHW one.
  KeyTable channels_last_kernel_time_factors;
  // Optimizers run as multi-tensor passes (torch.optim's foreach implementations); empty: each
  // update kernel as lowered (sim/multi_tensor.hpp).
  MultiTensorOptimizer multi_tensor_optimizer;
  // Measured host time per kernel by key (sim/schedule.hpp framework_kernel_key), as the file gives
  // it (times host_cost_scale where a what-if scaled the host); kernels without an entry cost
  // launch_overhead_s.
  KeyTable host_cost_s;
  // The same for kernels over channels_last tensors, where the profile measured them apart (the
  // library's host path at the models' sizes differs by layout); empty: host_cost_s.
  KeyTable channels_last_host_cost_s;
  // DDP without gradient_as_bucket_view: each parameter's gradient is copied into its bucket and
  // scaled by 1/world on the compute stream as it becomes ready (the harness reduces in place).
  bool ddp_gradient_copy = false;
  // nn.Linear's bias added in cuBLASLt's GEMM epilogue (PyTorch): no separate forward bias kernel.
  bool linear_bias_in_gemm = false;
  // The optimizer's GPU work priced as one pass over all parameters per kind of update (the harness's
  // one fused kernel over its flat buffer) instead of a kernel per layer (sim/schedule.hpp
  // update_kernel_times).
  bool optimizer_update_fused = false;
  // A concatenation run as one copy kernel per input into its channel slice of the output (the
  // harness's concat_slice), and its backward as one per input out of it, instead of one kernel for
  // all inputs (PyTorch's torch.cat). Priced by the concat/*/slice predictors.
  bool concat_copy_per_input = false;
  // Depthwise convolutions (groups equal to the input channels) on contiguous tensors outside fp16 run
  // with the framework's own kernels, as PyTorch's conv_depthwise2d_* (aten's use_cudnn_depthwise),
  // priced by the conv2d/*/native_depthwise predictors; the harness runs every convolution on cuDNN.
  bool depthwise_conv_native = false;
  // bf16 batchnorm on contiguous tensors runs with the framework's own kernels (PyTorch's
  // batch_norm_collect_statistics / transform_input / backward kernels), priced by the
  // batchnorm/*/bf16/native predictors; the harness and fp32/fp16 run cuDNN's.
  bool batchnorm_native_bf16 = false;
  // In-place ReLU6 (hardtanh_, as torchvision builds it) under autograd: its backward reads the input
  // the clamp overwrites, so each forward first copies the input (a Memcpy DtoD of the whole tensor,
  // as long as the clamp itself in torch.profiler).
  bool relu6_input_copy = false;
  // torch.compile of a DDP module splits the captured graph at DDP's bucket boundaries (DDPOptimizer,
  // torch._dynamo.config.optimize_ddp), one compiled graph per bucket, and the gradients of the
  // activations that cross a boundary are copied between layouts (sim/schedule.cpp graph_split_copies).
  // The copies stream at this fraction of the GPU's memory bandwidth (read plus write); 0: not
  // modelled. Eager steps and a model in one bucket have none.
  double compiled_ddp_split_copy_bandwidth_fraction = 0;
  // Under torch.compile a max or average pooling with a window runs as a generated kernel of its own,
  // not fused with the elementwise layers around it (workload/kernels.cpp), at the issue rate of its
  // window elements rather than its bytes.
  CompiledPooling compiled_pooling;
  // torch.compile without CUDA graphs: the compiled wrapper pays the host what eager PyTorch pays per
  // layer, though it issues fewer kernels (host_costs.py --compile on one H200: a conv+batchnorm+ReLU
  // block 518 us a step compiled, 525 eager; a convolution 193 and 196), plus a fixed cost per
  // compiled graph (sim/schedule.cpp compiled_host_shares). Off (each generated kernel at its own
  // key's cost) unless the profile has `compiled_host`.
  bool compiled_host_as_eager = false;
  double compiled_graph_host_s = 0;  // per graph DDPOptimizer cuts the step into, forward and backward together
  // torch.compile mode="reduce-overhead": the compiled module's kernels replay as CUDA graphs, but the
  // host still pays per layer in each pass (the replays' input and output bookkeeping, autograd's and
  // DDP's work per parameter outside the graphs) and per step (model_host_time.py at batch 1 on one
  // H200: resnet18 8.2 ms, densenet121 40 ms of host time a step; sim/schedule.cpp
  // compiled_host_shares). All 0 (the replay costs the host nothing) unless the profile has
  // `compiled_cuda_graphs_host`.
  double replay_host_per_step_s = 0;
  double replay_host_per_layer_fwd_s = 0;
  double replay_host_per_layer_bwd_s = 0;
  // torch.compile pads a matmul whose M, N or K is not a multiple of its operands' alignment, in
  // elements (Inductor's shape padding, torch._inductor.config.shape_padding, on by default), where the
  // padded matmul is the faster: GPT-2's LM head (N = 50257) runs cuBLAS's align1 kernels in eager
  // PyTorch, 13.3 ms of a 74.7 ms step at b16, T = 1024 on one H200, and aligned ones compiled
  // (sim/schedule.cpp pad_misaligned_gemms). 0: never padded.
  int compiled_gemm_alignment_16bit = 0;  // bf16 and fp16 operands
  int compiled_gemm_alignment_fp32 = 0;   // fp32 and tf32 operands
};

// A cluster's framework section: its host costs, and DDP's bucketing and overlap, which stay the
// cluster's (or the run's) whatever profile prices the host.
struct FrameworkSpec : FrameworkHostCosts {
  std::string name;
  int64_t first_bucket_bytes = 0;   // DDP: the first gradient bucket is smaller so it starts early
  int64_t bucket_bytes = 0;
  bool overlap = true;              // all-reduce buckets during the backward pass
};

// The most nodes a cluster may have, in a cluster file or as a study gives it (--cluster-nodes, a
// sweep file's "cluster_nodes", node counts): beyond it the question is not a training run.
constexpr int64_t kMaxClusterNodes = int64_t(1) << 20;

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
