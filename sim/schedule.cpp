#include "sim/schedule.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <set>
#include <unordered_map>

#include "compute/kernel_key.hpp"
#include "sim/multi_tensor.hpp"

namespace dtsim {

std::string framework_kernel_key(const KernelDesc& k) {
  std::string key = predictor_key(k);
  // FP16 kernels share the bf16 predictors, and PyTorch runs the same ops for both, except batchnorm:
  // PyTorch runs bf16 batchnorm with its own kernels but fp16 batchnorm with cuDNN's, the kernels the
  // harness measured (torch.profiler, resnet50 b64 on one H100: 15.0 ms against 9.7 ms per step,
  // validation/data/h100-sxm/kernels_beyond/amp_kernels_resnet50_b64.json). Its own key keeps the
  // bf16 ratios off it.
  if (k.kind == KernelKind::BatchNorm && k.math == MathMode::FP16) key.replace(key.rfind("/bf16"), 5, "/fp16");
  if ((k.kind == KernelKind::Eltwise || k.kind == KernelKind::Add) && *k.variant) key += std::string("/") + k.variant;
  // adam_update/update/fp32/adamw: AdamW's and Adam's steps cost the host more than SGD's (host_cost_s).
  if (k.kind == KernelKind::AdamUpdate && *k.variant) key += std::string("/") + k.variant;
  // PyTorch's native pooling is faster than cuDNN's on some windows and several times slower on others
  // (validation/data/h100-sxm/op_times: average 2x2/s2 backward 4.2x, max 3x3/s2/p1 backward 0.8x).
  if (k.kind == KernelKind::Pool && k.shape[4] == k.shape[5])
    key += "/k" + std::to_string(k.shape[4]) + "s" + std::to_string(k.shape[6]) + "p" + std::to_string(k.shape[7]);
  return key;
}

// The entry of `table` for k's most specific key, then its key with trailing parts dropped one by one
// down to kind/pass; null where none matches.
static const double* framework_table_lookup(const KernelDesc& k, const KeyTable& table) {
  std::string key = framework_kernel_key(k);
  for (;;) {
    if (auto it = table.find(key); it != table.end()) return &it->second;
    const size_t slash = key.rfind('/');
    if (slash == std::string::npos || std::count(key.begin(), key.end(), '/') < 2) return nullptr;
    key.resize(slash);
  }
}

namespace {
// What framework_kernel_key reads of a kernel: a step looks up hundreds of kernels, most of them
// alike, in each of a sweep's configurations, and spelling each key cost more than pricing the step.
struct KeyParts {
  KernelKind kind;
  Pass pass;
  MathMode math;
  MemoryFormat format;
  std::string variant;
  std::array<int64_t, 4> window{};  // a pooling's kernel, stride and padding
  bool operator==(const KeyParts& o) const {
    return kind == o.kind && pass == o.pass && math == o.math && format == o.format && variant == o.variant && window == o.window;
  }
};
struct KeyPartsHash {
  size_t operator()(const KeyParts& p) const {
    size_t h = std::hash<std::string>()(p.variant) ^ (size_t(p.kind) | size_t(p.pass) << 8 | size_t(p.math) << 16 | size_t(p.format) << 24);
    for (int64_t v : p.window) h = (h ^ static_cast<size_t>(v)) * 0x100000001b3ULL;
    return h;
  }
};
using EntryMemo = std::unordered_map<KeyParts, const double*, KeyPartsHash>;
}  // namespace

static const double* framework_table_entry(const KernelDesc& k, const KeyTable& table) {
  if (table.empty()) return nullptr;
  KeyParts parts{k.kind, k.pass, k.math, k.format, k.variant, {}};
  if (k.kind == KernelKind::Pool) parts.window = {k.shape[4], k.shape[5], k.shape[6], k.shape[7]};
  std::lock_guard<std::mutex> lock(*table.memo_mutex());
  EntryMemo& memo = *table.memo<EntryMemo>();
  if (const auto it = memo.find(parts); it != memo.end()) return it->second;
  const double* entry = framework_table_lookup(k, table);
  memo.emplace(std::move(parts), entry);
  return entry;
}

double framework_table_value(const KernelDesc& k, const KeyTable& table, double fallback) {
  const double* v = framework_table_entry(k, table);
  return v ? *v : fallback;
}

double framework_host_cost_s(const KernelDesc& k, const KeyTable* table, double fallback_s, double scale) {
  const double* v = table ? framework_table_entry(k, *table) : nullptr;
  return v ? *v * scale : fallback_s;
}

double framework_host_cost_s(const KernelDesc& k, const ScheduleOptions& opt) {
  const bool own = k.format == MemoryFormat::ChannelsLast && opt.channels_last_host_cost_s && !opt.channels_last_host_cost_s->empty();
  return framework_host_cost_s(k, own ? opt.channels_last_host_cost_s : opt.host_cost_s, opt.launch_overhead_s, opt.host_cost_scale);
}

// Whether kernel k runs inside the compiled module: the loss (computed outside it), DDP's gradient
// copies into its buckets and the optimizer step stay eager.
static bool inside_compiled_module(const KernelDesc& k) {
  return !(k.pass == Pass::Update || k.kind == KernelKind::SoftmaxCE ||
           (k.kind == KernelKind::Eltwise && std::string(k.variant) == "ddp_gradient_copy"));
}

bool graph_captured(const KernelDesc& k, Execution e) {
  if (e == Execution::CudaGraphs) return true;
  return e == Execution::CompileCudaGraphs && inside_compiled_module(k);
}

ScheduleOptions schedule_options(const ClusterSpec& c, bool overlap, bool record_kernels, Execution execution) {
  const FrameworkSpec& f = c.framework;
  ScheduleOptions opt;
  opt.execution = execution;
  opt.overlap = overlap;
  opt.first_bucket_bytes = f.first_bucket_bytes;
  opt.bucket_bytes = f.bucket_bytes;
  opt.launch_overhead_s = f.launch_overhead_s;
  opt.host_cost_s = &f.host_cost_s;
  opt.channels_last_host_cost_s = &f.channels_last_host_cost_s;
  opt.host_cost_scale = f.host_cost_scale;
  opt.ddp_gradient_copy = f.ddp_gradient_copy;
  opt.linear_bias_in_gemm = f.linear_bias_in_gemm;
  opt.concat_copy_per_input = f.concat_copy_per_input;
  opt.depthwise_conv_native = f.depthwise_conv_native;
  opt.batchnorm_native_bf16 = f.batchnorm_native_bf16;
  opt.relu6_input_copy = f.relu6_input_copy;
  opt.host_runs_ahead = f.host_runs_ahead;
  opt.compiled_ddp_split_copy_bandwidth_fraction = f.compiled_ddp_split_copy_bandwidth_fraction;
  opt.compiled_host_as_eager = f.compiled_host_as_eager;
  opt.compiled_graph_host_s = f.compiled_graph_host_s;
  opt.replay_host_per_step_s = f.replay_host_per_step_s;
  opt.replay_host_per_layer_fwd_s = f.replay_host_per_layer_fwd_s;
  opt.replay_host_per_layer_bwd_s = f.replay_host_per_layer_bwd_s;
  opt.compiled_gemm_alignment_16bit = f.compiled_gemm_alignment_16bit;
  opt.compiled_gemm_alignment_fp32 = f.compiled_gemm_alignment_fp32;
  opt.optimizer_update_fused = f.optimizer_update_fused;
  opt.multi_tensor = &f.multi_tensor_optimizer;
  opt.memory_bandwidth_Bps = c.gpu.memory_bandwidth_Bps;
  opt.iteration_overhead_s = f.iteration_overhead_s;
  opt.record_kernels = record_kernels;
  return opt;
}

std::vector<std::vector<std::pair<int, int64_t>>> assign_buckets(const Graph& g, int64_t first_cap, int64_t cap, int64_t bytes_per_param) {
  std::vector<std::vector<std::pair<int, int64_t>>> buckets(1);
  int64_t filled = 0, limit = first_cap;
  for (int i = static_cast<int>(g.layers.size()) - 1; i >= 0; --i) {
    const Layer& l = g.layers[i];
    // model.parameters() lists weight then bias; reversed, the bias comes first.
    for (int64_t n : {l.bias_params(), l.weight_params()}) {
      if (n == 0) continue;
      buckets.back().push_back({i, n * bytes_per_param});
      filled += n * bytes_per_param;
      if (filled >= limit) {
        buckets.emplace_back();
        filled = 0;
        limit = cap;
      }
    }
  }
  if (buckets.back().empty()) buckets.pop_back();
  return buckets;
}

namespace {

// DDP's gradient copy into its bucket (and the 1/world scale), one kernel per layer with
// parameters: two read-write passes over the FP32 gradient. copy_of[layer] is its index in the
// list (-1: the layer has no parameters).
std::vector<KernelDesc> ddp_gradient_copies(const Graph& g, std::vector<int>& copy_of) {
  std::vector<KernelDesc> copies;
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const int64_t p = g.layers[i].params();
    if (p <= 0) continue;
    KernelDesc copy{KernelKind::Eltwise, Pass::Bwd, MathMode::FP32, static_cast<int>(i), {}, "ddp_gradient_copy", 0, 0};
    copy.shape[0] = copy.shape[1] = 2 * p;
    set_cost(copy);
    copy_of[i] = static_cast<int>(copies.size());
    copies.push_back(copy);
  }
  return copies;
}

// The host issuing kernels onto the GPU's compute stream, adding what each costs to the step's
// totals (and, where `record` is given, each kernel's span to it).
class ComputeStream {
 public:
  ComputeStream(StepTotals& t, const ScheduleOptions& opt, std::vector<KernelSpan>* record)
      : t_(t), opt_(&opt), record_(record), s_{opt.iteration_overhead_s, 0, opt.host_runs_ahead} {}
  // The second phase: the stream where the first left it; every kernel's host cost is given.
  ComputeStream(StepTotals& t, const StreamState& at, std::vector<KernelSpan>* record) : t_(t), record_(record), s_(at) {}

  // A kernel starts when the stream is free, the host has issued it, and whatever it waits on
  // (`not_before`, the last all-reduce for the optimizer) is done. The stream's idle gap is split
  // into communication the GPU waits for and time the host is behind. Returns the kernel's
  // duration and end.
  // host_s, where not negative, is what the host pays for this kernel instead of its key's cost.
  std::pair<double, double> issue(const KernelDesc& kd, const KernelTime& kt, double not_before, double host_s = -1) {
    const double launch_s = host_s >= 0 ? host_s : host_cost_s(kd, *opt_);
    s_.host_s += launch_s;
    // A host that runs ahead has issued this kernel in an earlier iteration's slack; what it costs
    // the step is settled once, in finish() (steady state: the longer of host and GPU).
    const double issued = s_.ahead ? 0.0 : s_.host_s;
    const double start = std::max({s_.gpu_free_s, issued, not_before});
    const double comm_wait = std::max(0.0, not_before - std::max(s_.gpu_free_s, issued));
    t_.exposed_comm_s += comm_wait;
    t_.host_idle_s += (start - s_.gpu_free_s) - comm_wait;
    const double end = start + kt.seconds;
    s_.gpu_free_s = end;
    t_.compute_s += kt.seconds;
    (kt.memory_bound ? t_.memory_bound_s : t_.compute_bound_s) += kt.seconds;
    KindPricing& priced = t_.pricing[static_cast<int>(kd.kind)];
    (kt.source == TimeSource::Mlp ? priced.mlp_s : priced.roofline_s) += kt.seconds;
    if (!kt.in_range) priced.extrapolated_s += kt.seconds, t_.extrapolated_s += kt.seconds;
    if (record_) record_->push_back({kd.layer, kd.kind, kd.pass, s_.host_s, start, end, launch_s, kd.math, kd.variant});
    return {kt.seconds, end};
  }
  // What the host pays to issue kd: nothing where a CUDA graph replays it, else its key's cost.
  static double host_cost_s(const KernelDesc& kd, const ScheduleOptions& opt) {
    return graph_captured(kd, opt.execution) ? 0.0 : framework_host_cost_s(kd, opt);
  }
  // The host blocks until the GPU is done (a .item() on a GPU value). It is no longer ahead: the
  // kernels after the wait start as the host issues them.
  void host_syncs() {
    if (s_.ahead) {
      // In the steady state the host's issue time up to here overlaps the GPU's: the wait ends when
      // the later of the two does.
      s_.gpu_free_s = std::max(s_.gpu_free_s, s_.host_s);
      s_.ahead = false;
    }
    s_.host_s = std::max(s_.host_s, s_.gpu_free_s);
  }
  // The step's time: the GPU's end or, where the host ran ahead but issues slower than the GPU runs,
  // the host's issue time (the GPU waits that difference, spread over the step).
  double finish() {
    if (s_.ahead && s_.host_s > s_.gpu_free_s) {
      t_.host_idle_s += s_.host_s - s_.gpu_free_s;
      s_.gpu_free_s = s_.host_s;
    }
    return std::max(s_.gpu_free_s, s_.host_s);
  }
  // The GPU waits for the communication stream, with nothing of its own to run.
  void wait_for_comm(double comm_free_s) {
    if (comm_free_s <= s_.gpu_free_s) return;
    t_.exposed_comm_s += comm_free_s - s_.gpu_free_s;
    s_.gpu_free_s = comm_free_s;
  }
  double gpu_free_s() const { return s_.gpu_free_s; }
  const StreamState& state() const { return s_; }

 private:
  StepTotals& t_;
  const ScheduleOptions* opt_ = nullptr;  // null in the second phase, where every host cost is given
  std::vector<KernelSpan>* record_;
  StreamState s_;
};

// The backward pass, each layer's gradient copy after its last kernel; grad_ready[layer] is when
// the layer's gradients are ready for their bucket.
// host_share: what the host pays per kernel inside the compiled module (compiled_host_shares), -1: each its own.
void run_backward(const Graph& g, const IterationKernels& k, const std::vector<KernelTime>& bwd_t, const ComputeModel& compute,
                  const ScheduleOptions& opt, ComputeStream& stream, IterationTimeline& t, std::vector<double>& grad_ready,
                  double host_share) {
  std::vector<int> copy_of(g.layers.size(), -1);
  std::vector<KernelDesc> copies;
  std::vector<KernelTime> copy_t;
  if (opt.ddp_gradient_copy) {
    copies = ddp_gradient_copies(g, copy_of);
    compute.times(copies, copy_t);  // priced as one list too
  }
  for (size_t i = 0; i < k.backward.size(); ++i) {
    const KernelDesc& kd = k.backward[i];
    auto [dur, end] = stream.issue(kd, bwd_t[i], 0, inside_compiled_module(kd) ? host_share : -1);
    t.layers[kd.layer].bwd_s += dur;
    // A recomputed forward kernel (activation checkpointing) produces no gradient.
    if (kd.pass == Pass::Fwd) continue;
    grad_ready[kd.layer] = end;  // a layer's last backward kernel produces its parameter gradients
    const bool layer_done = i + 1 == k.backward.size() || k.backward[i + 1].layer != kd.layer;
    if (opt.ddp_gradient_copy && layer_done && copy_of[kd.layer] >= 0) {
      const int c = copy_of[kd.layer];
      auto [cdur, cend] = stream.issue(copies[c], copy_t[c], 0);
      t.layers[kd.layer].bwd_s += cdur;
      grad_ready[kd.layer] = cend;
    }
  }
}

// DDP's buckets with their bytes, tensors and the time their last gradient is ready.
std::vector<GradientBucket> ready_buckets(const Graph& g, const std::vector<double>& grad_ready, const ScheduleOptions& opt) {
  std::vector<GradientBucket> out;
  for (const auto& b : assign_buckets(g, opt.first_bucket_bytes, opt.bucket_bytes, opt.grad_bytes_per_param)) {
    GradientBucket gb;
    for (const auto& [layer, bytes] : b) {
      gb.bytes += bytes;
      gb.tensors++;
      gb.ready_s = std::max(gb.ready_s, grad_ready[layer]);
    }
    out.push_back(gb);
  }
  return out;
}

// The second phase onto totals t: the buckets' all-reduces on the communication stream in bucket
// order, the optimizer after the last, the step's end; each bucket kept where `buckets` is given.
void finish(const StepBeforeCollectives& s, const double* bucket_s, bool overlap, StepTotals& t, std::vector<GradientBucket>* buckets,
            std::vector<KernelSpan>* kernels) {
  double comm_free = 0;
  for (size_t j = 0; j < s.buckets.size(); ++j) {
    GradientBucket gb = s.buckets[j];
    const double ready = overlap ? gb.ready_s : t.backward_end_s;
    gb.start_s = std::max(ready, comm_free);
    gb.end_s = gb.start_s + bucket_s[j];
    comm_free = gb.end_s;
    t.comm_s += bucket_s[j];
    if (buckets) buckets->push_back(gb);
  }
  // The optimizer waits for the last all-reduce.
  ComputeStream stream(t, s.stream, kernels);
  for (size_t i = 0; i < s.update.size(); ++i) {
    if (i == s.update_host_sync_after && i > 0) stream.host_syncs();  // GradScaler's found_inf.item()
    t.optimizer_s += stream.issue(s.update[i], s.update_t[i], comm_free, s.update_host_s[i]).first;
  }
  stream.wait_for_comm(comm_free);  // a model without parameters to update still waits for its all-reduce
  t.iteration_s = stream.finish();
}

}  // namespace

// A forward bias add the framework leaves to the GEMM: PyTorch's nn.Linear adds its bias in cuBLASLt's
// epilogue (torch.profiler of gpt2_small and bert_base steps: every linear layer a *_bias_* GEMM, no
// separate add), except where its input is not contiguous (nn.MultiheadAttention's in_proj on T x N x C
// tensors: a strided add of its own in the vit_b_16 profile).
static bool bias_in_gemm(const Graph& g, const KernelDesc& k) {
  if (k.kind != KernelKind::Eltwise || k.pass != Pass::Fwd || k.layer < 0 || std::string(k.variant) != "bias_add") return false;
  if (g.layers[k.layer].op != Op::Linear) return false;
  for (const Layer& r : g.layers)
    if (r.op == Op::Attention && r.mha_layout && std::find(r.inputs.begin(), r.inputs.end(), k.layer) != r.inputs.end()) return false;
  return true;
}

void update_kernel_times(const ComputeModel& compute, const Graph& g, const std::vector<KernelDesc>& update, bool fused_update,
                         const MultiTensorOptimizer* multi_tensor, double memory_bandwidth_Bps, std::vector<KernelTime>& out) {
  if (multi_tensor && !multi_tensor->passes.empty()) {
    compute.times(update, out);
    // Each optimizer's update kernels: its parameter tensors in model.parameters() order (weight,
    // then bias), their launches priced together and shared by parameters.
    std::map<std::string, std::vector<size_t>> by_optimizer;
    for (size_t i = 0; i < update.size(); ++i)
      if ((update[i].kind == KernelKind::SgdUpdate || update[i].kind == KernelKind::AdamUpdate) &&
          runs_multi_tensor(*multi_tensor, update_optimizer_name(update[i])))
        by_optimizer[update_optimizer_name(update[i])].push_back(i);
    for (const auto& [name, kernels] : by_optimizer) {
      std::vector<int64_t> tensors;
      double params = 0;
      for (size_t i : kernels) {
        const Layer& l = g.layers[update[i].layer];
        tensors.push_back(l.weight_params());
        tensors.push_back(l.bias_params());
        params += update[i].shape[0];
      }
      const double step_s = multi_tensor_step_s(*multi_tensor, name, tensors, memory_bandwidth_Bps);
      for (size_t i : kernels) {
        out[i] = KernelTime{};
        out[i].seconds = step_s * update[i].shape[0] / params;
        out[i].memory_bound = true;
      }
    }
    if (!by_optimizer.empty()) return;
  }
  if (!fused_update) return compute.times(update, out);
  // One kernel per kind and variant, over the parameters of all its kernels, at its first kernel's place.
  std::vector<KernelDesc> fused;
  std::vector<size_t> fused_at(update.size(), SIZE_MAX), first;
  for (size_t i = 0; i < update.size(); ++i) {
    const KernelDesc& k = update[i];
    if (k.kind != KernelKind::SgdUpdate && k.kind != KernelKind::AdamUpdate) continue;
    size_t f = 0;
    while (f < fused.size() && !(fused[f].kind == k.kind && std::string(fused[f].variant) == k.variant && fused[f].math == k.math)) ++f;
    if (f == fused.size()) {
      fused.push_back(k);
      fused.back().shape[0] = 0;
      first.push_back(i);
    }
    fused[f].shape[0] += k.shape[0];
    fused_at[i] = f;
  }
  std::vector<KernelDesc> priced = update;
  for (size_t f = 0; f < fused.size(); ++f) {
    set_cost(fused[f]);
    priced[first[f]] = fused[f];
  }
  compute.times(priced, out);
  for (size_t i = 0; i < update.size(); ++i)
    if (fused_at[i] != SIZE_MAX && first[fused_at[i]] != i) out[i].seconds = 0;
}

// One concatenation as the framework runs it: per input, a copy of its elements into (forward) or
// out of (backward) its channel slice of the output, in input order; the backward skips the model's
// input, which needs no gradient.
static void concat_per_input(const Graph& g, const KernelDesc& k, std::vector<KernelDesc>& out) {
  const Layer& l = g.layers[k.layer];
  const int64_t channels = l.out.c;
  int64_t sum = 0;
  for (const Shape& x : l.in) sum += x.c;
  if (sum != channels || channels <= 0) return out.push_back(k);  // not along channels: one kernel as lowered
  for (size_t j = 0; j < l.inputs.size(); ++j) {
    if (k.pass != Pass::Fwd && l.inputs[j] < 0) continue;
    KernelDesc slice = k;
    slice.shape[0] = k.shape[0] / channels * l.in[j].c;
    slice.variant = "slice";
    set_cost(slice);
    out.push_back(slice);
  }
}

// A forward ReLU6 whose input autograd copies first (FrameworkSpec::relu6_input_copy): the copy reads
// and writes the tensor the clamp reads and writes, and took as long in torch.profiler (mobilenet_v2
// b256 on one H200: 96.0 against 98.0 us, 288.4 against 290.3 us; 2.95 against 2.98 ms a step in fp32).
static bool saves_relu6_input(const KernelDesc& k) {
  return k.kind == KernelKind::Activation && k.pass == Pass::Fwd && std::string(k.variant) == "relu6";
}

// torch.compile of a DDP module (FrameworkSpec::compiled_ddp_split_copies). DDPOptimizer cuts the
// captured graph where DDP's buckets part, walking the graph backwards as DDP fills its buckets, so
// that each bucket's all-reduce can start once its compiled backward ends. What crosses a cut loses
// Inductor's layout planning, and torch.profiler (validation/data/h200-sxm/pytorch_modes/graph_split)
// shows the gradients of the crossing activations copied by direct_copy kernels (NCHW <-> NHWC
// permutations), none once the graph is one piece (optimize_ddp off). Per crossing activation: one
// copy as the later graph hands its gradient over, one of the gradient entering the backward of the
// layer that made it (through a pooling, the pooling's input), and one more where a layer before the
// cut reads it too (a residual block's input): the copies of resnet50 b128, resnet18 b128 and vgg16
// b64 to the tensor. Where the cuts fall is DDP's bucket assignment (assign_buckets), which
// DDPOptimizer follows up to the layer it stops at.
static bool split_copies(const ScheduleOptions& opt) {
  return opt.compiled_ddp_split_copy_bandwidth_fraction > 0 && inductor_compiled(opt.execution);
}

static bool is_split_copy(const KernelDesc& d) { return d.kind == KernelKind::Eltwise && std::string(d.variant) == "graph_split_copy"; }

static void graph_split_copies(const Graph& g, const ScheduleOptions& opt, IterationKernels& k) {
  const auto buckets = assign_buckets(g, opt.first_bucket_bytes, opt.bucket_bytes, opt.grad_bytes_per_param);
  if (buckets.size() < 2 || k.batch <= 0) return;
  const int L = static_cast<int>(g.layers.size());
  const std::vector<bool> fp32 = autocast_fp32_outputs(g, k.precision);
  auto copy_of = [&](int layer) {
    KernelDesc d{KernelKind::Eltwise, Pass::Bwd, fp32[layer] ? MathMode::FP32 : math_mode_for(KernelKind::Eltwise, k.precision), layer, {}, "graph_split_copy", 0, 0};
    d.shape[0] = d.shape[1] = k.batch * g.layers[layer].out.elements();
    d.format = MemoryFormat::ChannelsLast;
    set_cost(d);
    return d;
  };
  // A layer the gradient passes through unchanged in kind: one input, no parameters, not a join.
  auto pass_through = [&](int j) {
    const Layer& l = g.layers[j];
    return l.params() == 0 && l.inputs.size() == 1 && l.inputs[0] >= 0 && l.op != Op::Add && l.op != Op::Concat;
  };
  // The cuts: the lowest layer of each bucket but the last (the model's first layers) starts a graph.
  std::vector<int> cuts;
  for (size_t b = 0; b + 1 < buckets.size(); ++b) {
    int first = buckets[b].front().first;
    for (const auto& [layer, bytes] : buckets[b]) first = std::min(first, layer);
    cuts.push_back(first);
  }
  std::vector<std::vector<KernelDesc>> at_cut(cuts.size());
  for (size_t c = 0; c < cuts.size(); ++c) {
    const int cut = cuts[c];
    for (int j = 0; j < cut; ++j) {
      if (!g.layers[j].out.spatial()) continue;  // only images have a layout to restore
      bool above = false, below = false;
      for (int i = j + 1; i < L; ++i)
        if (std::find(g.layers[i].inputs.begin(), g.layers[i].inputs.end(), j) != g.layers[i].inputs.end()) (i >= cut ? above : below) = true;
      if (!above) continue;
      int maker = j;
      while (pass_through(maker)) maker = g.layers[maker].inputs[0];
      at_cut[c].push_back(copy_of(j));
      at_cut[c].push_back(copy_of(maker));
      if (below) at_cut[c].push_back(copy_of(j));
    }
  }
  // Placed where the backward reaches the layers below each cut (cuts fall as the backward meets them).
  std::vector<KernelDesc> backward;
  size_t next = 0;
  for (const KernelDesc& d : k.backward) {
    for (; next < cuts.size() && d.layer >= 0 && d.layer < cuts[next]; ++next)
      backward.insert(backward.end(), at_cut[next].begin(), at_cut[next].end());
    backward.push_back(d);
  }
  k.backward = std::move(backward);
}

// The kernels as the framework issues them: the bias adds cuBLASLt's epilogue absorbs dropped, each
// concatenation split per input where the framework copies input by input, depthwise convolutions
// marked where the framework runs its own kernels for them, ReLU6's input copies added.
static IterationKernels framework_kernels(const Graph& g, const IterationKernels& all, const ScheduleOptions& opt) {
  IterationKernels k = all;
  if (opt.depthwise_conv_native)
    for (std::vector<KernelDesc>* list : {&k.forward, &k.backward})
      for (KernelDesc& d : *list)
        if (pytorch_runs_native_depthwise(d)) d.variant = kNativeDepthwise;
  if (opt.batchnorm_native_bf16)
    for (std::vector<KernelDesc>* list : {&k.forward, &k.backward})
      for (KernelDesc& d : *list)
        if (pytorch_runs_native_batchnorm(d)) d.variant = kNativeBatchnorm;
  if (opt.linear_bias_in_gemm)
    k.forward.erase(std::remove_if(k.forward.begin(), k.forward.end(), [&](const KernelDesc& d) { return bias_in_gemm(g, d); }), k.forward.end());
  if (opt.relu6_input_copy) {
    std::vector<KernelDesc> with_copies;
    for (const KernelDesc& d : k.forward) {
      if (saves_relu6_input(d)) with_copies.push_back(d);  // the copy: the clamp's bytes, priced as the clamp
      with_copies.push_back(d);
    }
    k.forward = std::move(with_copies);
  }
  if (split_copies(opt)) graph_split_copies(g, opt, k);
  if (opt.concat_copy_per_input)
    for (std::vector<KernelDesc>* list : {&k.forward, &k.backward}) {
      std::vector<KernelDesc> split;
      for (const KernelDesc& d : *list)
        if (d.kind == KernelKind::Concat && d.layer >= 0) concat_per_input(g, d, split);
        else split.push_back(d);
      *list = std::move(split);
    }
  return k;
}

// torch.compile without CUDA graphs (FrameworkSpec::compiled_host_as_eager). host_costs.py --compile
// on one H200 (validation/data/h200-sxm/host_costs): one more conv+batchnorm+ReLU block costs the host
// 518 us a step compiled and 525 us eager, one more convolution 193 and 196 us, though the compiled
// block issues fewer kernels: the compiled wrapper's Python issues each extern call and generated
// kernel at a higher cost than eager's C++ dispatch issues one op. So each pass inside the module
// costs the host what the eager pass of the same layers costs (the eager lowering's kernels at the
// profile's keys), plus per compiled graph (DDPOptimizer's cut: one per DDP bucket) its fixed cost,
// half in each pass; shared evenly by the kernels the compiled pass issues. Returns the share per
// kernel for the forward and the backward; -1 where the kernels keep their own keys' costs.
//
// Under mode="reduce-overhead" the module's kernels replay as CUDA graphs, yet model_host_time.py
// found the host busy for about half its eager time at batch 1 (resnet18 8.2 ms a step against 16.3
// eager; mode_profile.py's host list: each graph's replay and its outputs, AccumulateGrad, DDP's
// copies of each gradient into and out of its bucket, DDP's buffer broadcast). What stays is priced
// per layer that runs inside the module in each pass, and per step (half in each pass), again shared
// evenly by the pass's kernels.
static std::pair<double, double> replay_host_shares(const IterationKernels& k, const ScheduleOptions& opt) {
  if (opt.replay_host_per_step_s == 0 && opt.replay_host_per_layer_fwd_s == 0 && opt.replay_host_per_layer_bwd_s == 0)
    return {-1, -1};
  auto share = [&](const std::vector<KernelDesc>& pass, double per_layer_s) {
    std::set<int> layers;
    size_t n = 0;
    for (const KernelDesc& d : pass)
      if (inside_compiled_module(d)) ++n, layers.insert(d.layer);
    const double host_s = opt.replay_host_per_step_s / 2 + per_layer_s * static_cast<double>(layers.size());
    return n > 0 ? host_s / static_cast<double>(n) : -1.0;
  };
  return {share(k.forward, opt.replay_host_per_layer_fwd_s), share(k.backward, opt.replay_host_per_layer_bwd_s)};
}

static std::pair<double, double> compiled_host_shares(const Graph& g, const IterationKernels& all, const IterationKernels& k,
                                                      const ScheduleOptions& opt) {
  if (opt.execution == Execution::CompileCudaGraphs) return replay_host_shares(k, opt);
  if (opt.execution != Execution::Compile || !opt.compiled_host_as_eager || all.eager_forward.empty()) return {-1, -1};
  ScheduleOptions eager_opt = opt;
  eager_opt.execution = Execution::Eager;
  IterationKernels eager;
  eager.forward = all.eager_forward;
  eager.backward = all.eager_backward;
  eager.batch = all.batch;
  eager.precision = all.precision;
  eager = framework_kernels(g, eager, eager_opt);
  const double graphs = static_cast<double>(assign_buckets(g, opt.first_bucket_bytes, opt.bucket_bytes, opt.grad_bytes_per_param).size());
  auto share = [&](const std::vector<KernelDesc>& eager_pass, const std::vector<KernelDesc>& compiled_pass) {
    double host_s = graphs * opt.compiled_graph_host_s / 2;
    for (const KernelDesc& d : eager_pass)
      if (inside_compiled_module(d)) host_s += framework_host_cost_s(d, opt);
    const auto n = std::count_if(compiled_pass.begin(), compiled_pass.end(), inside_compiled_module);
    return n > 0 ? host_s / static_cast<double>(n) : -1.0;
  };
  return {share(eager.forward, k.forward), share(eager.backward, k.backward)};
}

// Inductor's shape padding (torch._inductor.config.shape_padding, on by default; its fx pass pad_mm):
// under torch.compile a matmul whose M, N or K is not a multiple of its operands' alignment (8
// elements in bf16 and fp16, 4 in fp32: 16 bytes) is run on operands padded with zeros to the next
// multiple, the result sliced back, where Inductor's benchmark finds that faster. cuBLAS runs a
// misaligned matmul on kernels that load one element at a time: GPT-2's LM head (N = 50257, b16,
// T = 1024, bf16) takes 13.3 ms eager on one H200 in cutlass_75_..._align1, and its padded twin
// 1.8 ms on nvjet compiled (torch.profiler, validation/data/h200-sxm/pytorch_transformers/compile).
// dtsim asks its own compute model the same question: the padded matmul (a dimension of 1 is never
// padded) plus writing each padded operand (its bytes read and the padded bytes written, at the
// memory bandwidth) and copying the sliced result out contiguous (the LM head's logits leave the
// compiled graph: a 1.9 ms direct_copy in that profile), against the matmul as it is, and keeps the
// faster. Inductor pads only when
// the padded one is more than 1.1 times faster and the matmul compute-bound by a heuristic of the
// machine balance; dtsim takes the minimum instead, so that better hardware never predicts a slower
// matmul (a threshold would switch back to the slow kernel as the GPU improves). Every operand is
// charged its padding copy, also where Inductor writes the padded layout directly (an autocast cast
// feeding the matmul): an upper bound on a cost of tens of microseconds.
static void pad_misaligned_gemms(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& t, const ComputeModel& compute,
                                 const ScheduleOptions& opt) {
  if (!inductor_compiled(opt.execution) || opt.memory_bandwidth_Bps <= 0) return;
  std::vector<KernelDesc> padded;
  std::vector<size_t> at;
  std::vector<double> copy_s;
  for (size_t i = 0; i < ks.size(); ++i) {
    const KernelDesc& k = ks[i];
    if (k.kind != KernelKind::Gemm) continue;
    const int64_t align = element_bytes(k.math) == 2 ? opt.compiled_gemm_alignment_16bit : opt.compiled_gemm_alignment_fp32;
    if (align <= 1) continue;
    auto up = [&](int64_t x) { return x <= 1 || x % align == 0 ? x : (x / align + 1) * align; };
    const int64_t m = k.shape[0], n = k.shape[1], kk = k.shape[2];
    const int64_t mp = up(m), np = up(n), kp = up(kk);
    if (mp == m && np == n && kp == kk) continue;
    KernelDesc p = k;
    p.shape[0] = mp;
    p.shape[1] = np;
    p.shape[2] = kp;
    set_cost(p);
    const double eb = element_bytes(k.math);
    double bytes = 0;
    if (mp != m || kp != kk) bytes += eb * (static_cast<double>(m) * kk + static_cast<double>(mp) * kp);
    if (kp != kk || np != n) bytes += eb * (static_cast<double>(kk) * n + static_cast<double>(kp) * np);
    if (mp != m || np != n) bytes += eb * (static_cast<double>(mp) * np + static_cast<double>(m) * n);  // the slice, made contiguous
    padded.push_back(p);
    at.push_back(i);
    copy_s.push_back(bytes / opt.memory_bandwidth_Bps);
  }
  if (padded.empty()) return;
  std::vector<KernelTime> pt;
  compute.times(padded, pt);
  for (size_t j = 0; j < padded.size(); ++j) {
    const double s = pt[j].seconds + copy_s[j];
    if (s < t[at[j]].seconds) {
      t[at[j]] = pt[j];
      t[at[j]].seconds = s;
    }
  }
}

StepBeforeCollectives step_before_collectives(const Graph& g, const IterationKernels& all, const ComputeModel& compute, const ScheduleOptions& opt) {
  auto any_forward = [&](auto&& pred) { return std::any_of(all.forward.begin(), all.forward.end(), pred); };
  const bool changed = (opt.concat_copy_per_input && any_forward([](const KernelDesc& d) { return d.kind == KernelKind::Concat; })) ||
                       (opt.depthwise_conv_native && any_forward([](const KernelDesc& d) { return pytorch_runs_native_depthwise(d); })) ||
                       (opt.batchnorm_native_bf16 && any_forward(pytorch_runs_native_batchnorm)) ||
                       (opt.linear_bias_in_gemm && any_forward([&](const KernelDesc& d) { return bias_in_gemm(g, d); })) ||
                       (opt.relu6_input_copy && any_forward(saves_relu6_input)) ||
                       split_copies(opt);
  const IterationKernels framework = changed ? framework_kernels(g, all, opt) : IterationKernels{};
  const IterationKernels& k = changed ? framework : all;
  StepBeforeCollectives s;
  IterationTimeline& t = s.timeline;
  const size_t L = g.layers.size();
  t.layers.assign(L, {});
  for (size_t i = 0; i < L; ++i) t.layers[i].grad_bytes = g.layers[i].params() * opt.grad_bytes_per_param;
  std::vector<double> grad_ready(L, 0.0);

  // Kernel times first, in batches: predictors infer many kernels at once.
  std::vector<KernelTime> fwd_t, bwd_t;
  compute.times(k.forward, fwd_t);
  compute.times(k.backward, bwd_t);
  pad_misaligned_gemms(k.forward, fwd_t, compute, opt);
  pad_misaligned_gemms(k.backward, bwd_t, compute, opt);
  // The split's copies are permutations by PyTorch's generic strided copy, far from a contiguous copy's
  // speed: priced at their measured fraction of the memory bandwidth.
  for (size_t i = 0; i < k.backward.size(); ++i)
    if (split_copies(opt) && is_split_copy(k.backward[i])) {
      bwd_t[i] = KernelTime{};
      bwd_t[i].seconds = k.backward[i].bytes / (opt.compiled_ddp_split_copy_bandwidth_fraction * opt.memory_bandwidth_Bps);
      bwd_t[i].memory_bound = true;
    }
  update_kernel_times(compute, g, k.update, opt.optimizer_update_fused, opt.multi_tensor, opt.memory_bandwidth_Bps, s.update_t);

  const auto [fwd_host, bwd_host] = compiled_host_shares(g, all, k, opt);
  ComputeStream stream(t, opt, opt.record_kernels ? &t.kernels : nullptr);
  for (size_t i = 0; i < k.forward.size(); ++i)
    t.layers[k.forward[i].layer].fwd_s += stream.issue(k.forward[i], fwd_t[i], 0, inside_compiled_module(k.forward[i]) ? fwd_host : -1).first;
  t.forward_end_s = stream.gpu_free_s();
  run_backward(g, k, bwd_t, compute, opt, stream, t, grad_ready, bwd_host);
  t.backward_end_s = stream.gpu_free_s();
  s.buckets = ready_buckets(g, grad_ready, opt);
  s.update = k.update;
  for (const KernelDesc& d : k.update) s.update_host_s.push_back(ComputeStream::host_cost_s(d, opt));
  s.update_host_sync_after = k.update_host_sync_after;
  s.stream = stream.state();
  s.record_kernels = opt.record_kernels;
  return s;
}

IterationTimeline finish_step(const StepBeforeCollectives& s, const std::vector<double>& bucket_s, bool overlap) {
  IterationTimeline t = s.timeline;
  finish(s, bucket_s.data(), overlap, t, &t.buckets, s.record_kernels ? &t.kernels : nullptr);
  return t;
}

double finish_step_s(const StepBeforeCollectives& s, const double* bucket_s, bool overlap) {
  StepTotals t = s.timeline;
  finish(s, bucket_s, overlap, t, nullptr, nullptr);
  return t.iteration_s;
}

std::vector<double> bucket_times(const StepBeforeCollectives& s, const std::function<double(double)>& allreduce_s) {
  std::vector<double> out;
  out.reserve(s.buckets.size());
  for (const GradientBucket& b : s.buckets) out.push_back(allreduce_s(static_cast<double>(b.bytes)));
  return out;
}

IterationTimeline simulate_iteration(const Graph& g, const IterationKernels& all, const ComputeModel& compute,
                                     const std::function<double(double)>& allreduce_s, const ScheduleOptions& opt) {
  const StepBeforeCollectives s = step_before_collectives(g, all, compute, opt);
  return finish_step(s, bucket_times(s, allreduce_s), opt.overlap);
}

}  // namespace dtsim
