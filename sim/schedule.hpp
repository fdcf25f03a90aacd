#pragma once
// The iteration schedule (docs/design.md §3, Iteration model): one host thread issuing kernels to a
// compute stream, gradient buckets all-reduced on a communication stream as they fill, then the
// optimizer.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "workload/graph.hpp"
#include "workload/kernels.hpp"
#include "network/cluster.hpp"
#include "compute/compute_model.hpp"

namespace dtsim {

struct GradientBucket {
  int64_t bytes = 0;
  int tensors = 0;
  double ready_s = 0;  // every gradient in it computed
  double start_s = 0;  // all-reduce begins
  double end_s = 0;
};

struct LayerTimes {
  double fwd_s = 0;
  double bwd_s = 0;
  int64_t grad_bytes = 0;
};

struct KernelSpan {
  int layer;
  KernelKind kind;
  Pass pass;
  double issue_s, start_s, end_s;
  double host_s = 0;  // host time spent issuing it (ends at issue_s)
  MathMode math = MathMode::FP32;
  const char* variant = "";  // KernelDesc::variant (static storage)
};

// GPU time per kernel kind by what priced it (compute/compute_model.hpp TimeSource), and the part of
// the measured predictors' time that lay outside their training range.
struct KindPricing {
  double mlp_s = 0, roofline_s = 0, extrapolated_s = 0;
};

// A step's running totals, the scalars of its timeline: what the compute stream adds to as kernels
// are issued, and what the step engine's second phase (finish_step_s) needs no more than.
struct StepTotals {
  double iteration_s = 0;
  double compute_s = 0;               // GPU busy with kernels
  double compute_bound_s = 0;         // of which limited by arithmetic
  double memory_bound_s = 0;          // of which limited by memory bandwidth
  double comm_s = 0;                  // all-reduce time, overlapped or not
  double exposed_comm_s = 0;          // the compute stream waiting for the last all-reduce
  double host_idle_s = 0;             // the GPU waiting for the host to issue work
  double optimizer_s = 0;
  double forward_end_s = 0, backward_end_s = 0;
  std::array<KindPricing, kKernelKinds> pricing{};  // by KernelKind
  double extrapolated_s = 0;          // GPU time priced by predictors outside their training range
};

struct IterationTimeline : StepTotals {
  std::vector<LayerTimes> layers;     // per graph layer
  std::vector<GradientBucket> buckets;
  std::vector<KernelSpan> kernels;    // filled when asked for
};

struct ScheduleOptions {
  bool overlap = true;
  int64_t first_bucket_bytes = 1 << 20;
  int64_t bucket_bytes = 25 << 20;
  double launch_overhead_s = 0;  // host time per kernel, where host_cost_s has no entry
  // Host time per kernel by key (FrameworkSpec::host_cost_s, framework_kernel_key); may be null.
  const KeyTable* host_cost_s = nullptr;
  // FrameworkSpec::channels_last_host_cost_s, for channels_last kernels; null or empty: host_cost_s.
  const KeyTable* channels_last_host_cost_s = nullptr;
  double host_cost_scale = 1;  // FrameworkSpec's: the tables' entries are read times it
  double iteration_overhead_s = 0;
  bool host_runs_ahead = false;  // FrameworkSpec::host_runs_ahead
  bool ddp_gradient_copy = false;  // FrameworkSpec::ddp_gradient_copy
  bool linear_bias_in_gemm = false;  // FrameworkSpec::linear_bias_in_gemm
  bool optimizer_update_fused = false;  // FrameworkSpec::optimizer_update_fused
  // FrameworkSpec::multi_tensor_optimizer (may be null), and the GPU's memory bandwidth it streams at.
  const MultiTensorOptimizer* multi_tensor = nullptr;
  double memory_bandwidth_Bps = 0;
  bool concat_copy_per_input = false;  // FrameworkSpec::concat_copy_per_input
  bool depthwise_conv_native = false;  // FrameworkSpec::depthwise_conv_native
  bool batchnorm_native_bf16 = false;  // FrameworkSpec::batchnorm_native_bf16
  bool relu6_input_copy = false;  // FrameworkSpec::relu6_input_copy
  double compiled_ddp_split_copy_bandwidth_fraction = 0;  // FrameworkSpec's; 0: no copies
  bool compiled_host_as_eager = false;  // FrameworkSpec's
  double compiled_graph_host_s = 0;     // FrameworkSpec's
  double replay_host_per_step_s = 0;       // FrameworkSpec's
  double replay_host_per_layer_fwd_s = 0;  // FrameworkSpec's
  double replay_host_per_layer_bwd_s = 0;  // FrameworkSpec's
  int compiled_gemm_alignment_16bit = 0;   // FrameworkSpec's; 0: no padding
  int compiled_gemm_alignment_fp32 = 0;    // FrameworkSpec's
  int64_t grad_bytes_per_param = 4;  // FP32 gradients, also under autocast
  bool record_kernels = false;
  // CUDA graphs replay captured kernels without the host issuing each (host_captured()).
  Execution execution = Execution::Eager;
};

// Whether the host issues kernel k itself (a host cost per kernel) or a CUDA graph replays it:
// cuda-graphs captures the whole step; torch.compile(mode="reduce-overhead") captures the compiled
// module's forward and backward, while the loss (computed outside the module), DDP's gradient copies
// into its buckets and the optimizer step stay eager.
bool graph_captured(const KernelDesc& k, Execution e);

// The schedule's options as cluster c's framework runs it: its buckets, host costs, DDP's gradient
// copy and its optimizer's launches.
ScheduleOptions schedule_options(const ClusterSpec& c, bool overlap, bool record_kernels, Execution execution = Execution::Eager);

// A kernel's most specific key in a framework profile's tables (host_cost_s, kernel_time_factors):
// "conv2d/fwd/bf16", "activation/bwd/fp32/relu", "eltwise/fwd/fp32/bias_add", "pool/bwd/bf16/max/k2s2p0".
std::string framework_kernel_key(const KernelDesc& k);
// The entry of `table` for framework_kernel_key(k), trailing parts dropped until one matches (down to
// kind/pass), else fallback.
double framework_table_value(const KernelDesc& k, const KeyTable& table, double fallback);
// A framework's host time to issue kernel k: its entry of `table` times `scale` (null or no entry: fallback_s).
double framework_host_cost_s(const KernelDesc& k, const KeyTable* table, double fallback_s, double scale = 1);
// What the host pays to issue kernel k under these options: its layout's table, else the launch cost.
double framework_host_cost_s(const KernelDesc& k, const ScheduleOptions& opt);

// The optimizer's kernel times. With `fused` (FrameworkSpec::optimizer_update_fused) its GPU work is
// priced as the framework runs it, one pass over all parameters: each kind of update kernel (SGD,
// Adam, AdamW) once over all the parameters it updates, that time on its first kernel; the others
// keep their host issue cost with no GPU time of their own. The harness runs one fused kernel over
// its flat parameter buffer: priced per layer, resnet50's update came out at 0.76 ms on the H100
// where the harness measures 0.18 ms (vgg16's few large layers: 1.01 against 0.96 ms).
// With `multi_tensor` holding the kernels' optimizer (FrameworkSpec::multi_tensor_optimizer, PyTorch's
// foreach optimizers), the step's multi-tensor launches over all of g's parameter tensors are priced
// together (sim/multi_tensor.hpp) and their GPU time shared among the update kernels by parameters;
// each kernel keeps its host issue cost. Without either, a kernel per layer, as lowered.
void update_kernel_times(const ComputeModel& compute, const Graph& g, const std::vector<KernelDesc>& update, bool fused,
                         const MultiTensorOptimizer* multi_tensor, double memory_bandwidth_Bps, std::vector<KernelTime>& out);

// The compute stream where a step's collectives begin: the host's clock and the GPU's.
struct StreamState {
  double host_s = 0;      // the host has issued everything up to here
  double gpu_free_s = 0;  // the compute stream is free from here
  bool ahead = false;     // the host runs ahead of the GPU (ScheduleOptions::host_runs_ahead) and has not waited
};

// The step engine runs a step in two phases. The first, everything a configuration's collectives do
// not change: every kernel priced, the forward and backward passes issued, each gradient bucket's
// bytes and the time its gradients are ready, the optimizer's kernels priced with what each costs the
// host. The second (finish_step) adds the buckets' all-reduces, the optimizer and the step's end.
// One first phase serves every GPU count, link, algorithm and overlap setting of a model, batch and
// GPU: predict's 1-GPU baseline and bottleneck what-ifs, a sweep's network axes, plan's search.
struct StepBeforeCollectives {
  IterationTimeline timeline;           // the passes issued; no buckets, optimizer or iteration time yet
  std::vector<GradientBucket> buckets;  // bytes, tensors and ready_s; start_s and end_s unset
  std::vector<KernelDesc> update;       // the optimizer's kernels, in issue order
  std::vector<KernelTime> update_t;
  std::vector<double> update_host_s;    // what each costs the host to issue
  size_t update_host_sync_after = SIZE_MAX;
  StreamState stream;
  bool record_kernels = false;
};

// The first phase (ScheduleOptions::overlap is the second's business).
StepBeforeCollectives step_before_collectives(const Graph& g, const IterationKernels& k, const ComputeModel& compute, const ScheduleOptions& opt);
// The second: bucket j's all-reduce takes bucket_s[j] (one per bucket, in bucket order); with
// `overlap` each starts once its gradients are ready and the previous one is done, else after the
// backward pass.
IterationTimeline finish_step(const StepBeforeCollectives& s, const std::vector<double>& bucket_s, bool overlap);
// The same step's iteration time alone, keeping no timeline (plan prices millions of configurations).
double finish_step_s(const StepBeforeCollectives& s, const double* bucket_s, bool overlap);
// Each bucket's all-reduce priced by `allreduce_s(bytes)`, in bucket order.
std::vector<double> bucket_times(const StepBeforeCollectives& s, const std::function<double(double)>& allreduce_s);

// Both phases: `allreduce_s(bytes)` prices one bucket's all-reduce.
IterationTimeline simulate_iteration(const Graph& g, const IterationKernels& k, const ComputeModel& compute,
                                     const std::function<double(double)>& allreduce_s, const ScheduleOptions& opt);

// DDP's bucket assignment: parameter tensors in reverse order of model.parameters(), a bucket closing
// once it holds at least its cap (the first bucket's cap is smaller). Returns, per bucket, the
// (layer, bytes) of its tensors.
std::vector<std::vector<std::pair<int, int64_t>>> assign_buckets(const Graph& g, int64_t first_cap, int64_t cap, int64_t bytes_per_param);

}  // namespace dtsim
