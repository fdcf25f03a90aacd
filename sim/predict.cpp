#include "sim/predict.hpp"

#include <algorithm>
#include <optional>

#include "core/error.hpp"
#include "sim/compiled_pool.hpp"
#include "sim/multi_tensor.hpp"
#include "sim/strategies/data_parallel.hpp"

namespace dtsim {

static IterationTimeline run_schedule(const Graph& g, const IterationKernels& k, const ClusterSpec& c, const TrainingConfig& cfg,
                                      const ComputeModel& compute, const CollectiveAlgorithm& algo, const Placement& place) {
  const ScheduleOptions opt = schedule_options(c, cfg.overlap.value_or(c.framework.overlap), cfg.record_kernels, cfg.mode.execution);
  auto allreduce = [&](double bytes) { return algo.time_s(CollectiveOp::AllReduce, bytes, place, c); };
  return simulate_iteration(g, k, compute, allreduce, opt);
}

// A strategy parameter given to a strategy that does not read it is a mistake worth naming.
// A parameter given (not at its default) that the strategy does not read is an input error.
static void check_strategy_params(const Strategy& strategy, const StrategyParams& sp) {
  const StrategyParams own = strategy.own_params(sp), unset;
  const std::pair<bool, const char*> misplaced[] = {
      {sp.global_skip != unset.global_skip && own.global_skip != sp.global_skip, "--global-skip"},
      {sp.batches_to_wait != unset.batches_to_wait && own.batches_to_wait != sp.batches_to_wait, "--batches-to-wait"},
      {sp.tau != unset.tau && own.tau != sp.tau, "--tau"},
      {sp.servers != unset.servers && own.servers != sp.servers, "--servers"},
      {sp.pr != unset.pr && own.pr != sp.pr, "--pr"},
      {sp.pc != unset.pc && own.pc != sp.pc, "--pc"},
      {sp.domain != unset.domain && own.domain != sp.domain, "--domain"}};
  for (const auto& [wrong, flag] : misplaced)
    if (wrong) throw InputError(flag, "does not apply to --strategy " + strategy.name());
}

namespace {

// The compute model as the cluster's framework sees it: kernels the framework implements itself run
// their measured time ratio longer (FrameworkSpec::kernel_time_factors).
class FrameworkKernels : public ComputeModel {
 public:
  FrameworkKernels(std::unique_ptr<ComputeModel> inner, const FrameworkSpec& fw, const GpuSpec& gpu)
      : inner_(std::move(inner)), fw_(fw), gpu_(gpu), memory_bandwidth_Bps_(gpu.memory_bandwidth_Bps) {}
  std::string name() const override { return inner_->name(); }
  std::string note() const override {
    if (fw_.kernel_time_factors.empty()) return inner_->note();
    return inner_->note() + "; " + fw_.name + "'s own kernels: " + std::to_string(fw_.kernel_time_factors.size()) + " kinds scaled by measured ratios";
  }
  KernelTime time(const KernelDesc& k) const override {
    if (auto t = update_time(k)) return *t;
    if (auto t = compiled_pool_time(fw_.compiled_pooling, k, gpu_)) return *t;
    KernelTime t = inner_->time(k);
    t.seconds *= factor(k);
    return t;
  }
  void times(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& out) const override {
    inner_->times(ks, out);
    for (size_t i = 0; i < ks.size(); ++i) {
      if (auto t = update_time(ks[i])) out[i] = *t;
      else if (auto p = compiled_pool_time(fw_.compiled_pooling, ks[i], gpu_)) out[i] = *p;
      else out[i].seconds *= factor(ks[i]);
    }
  }

 private:
  // The most specific key first (sim/schedule.hpp): an elementwise kernel's variant and a pooling
  // window have keys of their own, as PyTorch runs its own kernels for them. channels_last kernels
  // read their own table.
  double factor(const KernelDesc& k) const {
    const auto& table = k.format == MemoryFormat::ChannelsLast ? fw_.channels_last_kernel_time_factors : fw_.kernel_time_factors;
    return framework_table_value(k, table, 1.0);
  }
  // An optimizer update kernel alone (one layer's parameters as one tensor). A framework that runs
  // the optimizer as multi-tensor passes prices them (sim/multi_tensor.hpp); the schedule prices a
  // whole step's launches together (update_kernel_times). Otherwise an Adam update is the SGD update
  // of the same parameters, which a measured predictor (and the framework's factor) prices, scaled
  // by the fused kernels' bytes (28 against 20 per parameter): both stream the same tensors, so
  // Adam costs what SGD costs times its extra traffic, never less.
  std::optional<KernelTime> update_time(const KernelDesc& k) const {
    if (k.kind != KernelKind::SgdUpdate && k.kind != KernelKind::AdamUpdate) return std::nullopt;
    const std::string name = update_optimizer_name(k);
    if (runs_multi_tensor(fw_.multi_tensor_optimizer, name)) {
      KernelTime t;
      t.seconds = multi_tensor_step_s(fw_.multi_tensor_optimizer, name, {k.shape[0]}, memory_bandwidth_Bps_);
      t.memory_bound = true;
      return t;
    }
    if (k.kind != KernelKind::AdamUpdate) return std::nullopt;
    KernelDesc sgd = k;
    sgd.kind = KernelKind::SgdUpdate;
    sgd.variant = "";
    set_cost(sgd);
    KernelTime t = inner_->time(sgd);
    t.seconds *= factor(sgd) * k.bytes / sgd.bytes;
    return t;
  }
  std::unique_ptr<ComputeModel> inner_;
  FrameworkSpec fw_;
  GpuSpec gpu_;
  double memory_bandwidth_Bps_;
};

}  // namespace

std::unique_ptr<ComputeModel> cluster_compute_model(const std::string& name, const ClusterSpec& c) {
  auto m = make_compute_model(name, c.gpu);
  // Always wrapped: Adam's updates are priced from SGD's even without a framework's tables.
  return std::make_unique<FrameworkKernels>(std::move(m), c.framework, c.gpu);
}

StepMode parse_step_mode(const StepModeNames& names) {
  StepMode m;
  const auto format = parse_memory_format(names.memory_format);
  if (!format) throw InputError("--memory-format", "must be contiguous or channels_last, got '" + names.memory_format + "'");
  const auto optimizer = parse_optimizer(names.optimizer);
  if (!optimizer) throw InputError("--optimizer", "must be sgd, adamw or adam, got '" + names.optimizer + "'");
  const auto execution = parse_execution(names.execution);
  if (!execution) throw InputError("--execution", "must be eager, cuda-graphs, compile or compile-cuda-graphs, got '" + names.execution + "'");
  m.memory_format = *format;
  m.optimizer = *optimizer;
  m.execution = *execution;
  return m;
}

TrainingConfig training_config(const RunSpec& run) {
  TrainingConfig cfg;
  static_cast<TrainingSettings&>(cfg) = run;
  cfg.precision = parse_precision(run.precision);
  cfg.mode = parse_step_mode(run);
  return cfg;
}

IterationTimeline single_gpu_step(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg, int64_t batch) {
  auto compute = cluster_compute_model(cfg.compute_model, c);
  auto algo = make_collective_algorithm(cfg.algo);
  TrainingConfig one = cfg;
  one.record_kernels = false;
  return run_schedule(g, lower_iteration(g, batch, cfg.precision, cfg.mode), c, one, *compute, *algo, place(c, 1));
}

const char* resource_name(Resource r) {
  switch (r) {
    case Resource::Compute: return "compute";
    case Resource::Memory: return "memory";
    case Resource::Communication: return "communication";
    case Resource::Host: return "host";
  }
  return "?";
}

WhatIf improved(Resource r) {
  WhatIf w;
  switch (r) {
    case Resource::Compute: w.flops_scale = 2; break;
    case Resource::Memory: w.memory_bandwidth_scale = 2; break;
    case Resource::Communication:
      w.intra_node_bandwidth_scale = 2;
      w.inter_node_bandwidth_scale = 2;
      w.latency_scale = 0.5;
      break;
    case Resource::Host: w.launch_overhead_scale = 0.5; break;
  }
  return w;
}

std::string bottleneck_rule(const double parts[4], double iteration_s, const std::function<double(Resource)>& gain_s) {
  // Largest part first; ties keep the order compute, memory, communication, host.
  int order[4] = {0, 1, 2, 3};
  std::stable_sort(std::begin(order), std::end(order), [&](int a, int b) { return parts[a] > parts[b]; });
  double gains[4] = {0, 0, 0, 0};
  bool asked[4] = {false, false, false, false};
  for (int i : order) {
    if (!(parts[i] > 0)) continue;
    gains[i] = gain_s(static_cast<Resource>(i));
    asked[i] = true;
    if (gains[i] >= kBottleneckGain * iteration_s) return resource_name(static_cast<Resource>(i));
  }
  // No improvement buys that much: the one that buys most (the largest part if none buys anything).
  int best = order[0];
  for (int i : order)
    if (asked[i] && gains[i] > gains[best]) best = i;
  return resource_name(static_cast<Resource>(best));
}

namespace {

// One training step of the configuration on a cluster: predict's own step and the same step on the
// cluster with one resource improved, for the bottleneck and the limiting link.
class Stepper {
 public:
  Stepper(const Graph& g, const IterationKernels& kernels, const TrainingConfig& cfg, const CollectiveAlgorithm& algo, const Strategy& strategy,
          const Placement& where)
      : g_(g), kernels_(kernels), cfg_(cfg), algo_(algo), strategy_(strategy), where_(where) {}

  bool dp() const { return strategy_.name() == "dp"; }

  // DDP's step (the dp strategy's, and what the others' shares are read from when they replay none).
  IterationTimeline dp_step(const ClusterSpec& c, const ComputeModel& compute, bool record) const {
    TrainingConfig run = cfg_;
    run.record_kernels = record;
    return run_schedule(g_, kernels_, c, run, compute, algo_, where_);
  }

  StrategyOutcome strategy_step(const ClusterSpec& c, const ComputeModel& compute, bool record) const {
    const bool overlap = cfg_.overlap.value_or(c.framework.overlap);
    auto simulate = [&](const std::function<double(double)>& bucket_s) {
      return simulate_iteration(g_, kernels_, compute, bucket_s, schedule_options(c, overlap, record, cfg_.mode.execution));
    };
    TrainingConfig quiet = cfg_;
    quiet.record_kernels = false;
    auto single = [&](int64_t batch) {
      if (batch == cfg_.batch_per_gpu) return run_schedule(g_, kernels_, c, quiet, compute, algo_, place(c, 1));
      return run_schedule(g_, lower_iteration(g_, batch, cfg_.precision, cfg_.mode), c, quiet, compute, algo_, place(c, 1));
    };
    StrategyContext ctx{g_, c, where_, cfg_.batch_per_gpu, cfg_.precision, compute, algo_, cfg_.strategy_params, simulate, single};
    return strategy_.predict(ctx);
  }

  // The step's time and its communication per step on cluster c.
  std::pair<double, double> step(const ClusterSpec& c, const ComputeModel& compute) const {
    if (dp()) {
      const IterationTimeline t = dp_step(c, compute, false);
      return {t.iteration_s, t.comm_s};
    }
    const StrategyOutcome o = strategy_step(c, compute, false);
    return {o.step_s, o.comm_s};
  }

  // Communication per step on cluster c; dp's is its buckets' all-reduces, whatever the schedule.
  double comm_s(const ClusterSpec& c, const ComputeModel& compute, const std::vector<GradientBucket>& buckets) const {
    if (!dp()) return step(c, compute).second;
    double s = 0;
    for (const auto& b : buckets) s += algo_.time_s(CollectiveOp::AllReduce, static_cast<double>(b.bytes), where_, c);
    return s;
  }

 private:
  const Graph& g_;
  const IterationKernels& kernels_;
  const TrainingConfig& cfg_;
  const CollectiveAlgorithm& algo_;
  const Strategy& strategy_;
  const Placement& where_;
};

// What limits the communication, by what a 2x better link or latency changes (Prediction::comm_bottleneck).
std::string limiting_link(const ClusterSpec& c, double comm_s, const std::function<double(const ClusterSpec&)>& comm_on) {
  // Communication that no what-if changes comes out bit for bit the same; anything else counts.
  const double noise = 1e-9 * comm_s;
  WhatIf intra, inter, latency;
  intra.intra_node_bandwidth_scale = 2;
  inter.inter_node_bandwidth_scale = 2;
  latency.latency_scale = 0.5;
  const double gain_intra = comm_s - comm_on(apply_what_if(c, intra));
  const double gain_inter = comm_s - comm_on(apply_what_if(c, inter));
  if (gain_inter > noise && gain_inter > gain_intra) return "inter-node network";
  if (gain_intra > noise) return "intra-node " + c.intra.kind;
  if (comm_s - comm_on(apply_what_if(c, latency)) > noise) return "per-step latency";
  return "collective library's own limits";
}

// The strategy's step: `dp`'s is the DDP step already in p; the others price their own, which
// replaces the step's numbers.
void apply_strategy_step(Prediction& p, const Stepper& stepper, const Strategy& strategy, const ClusterSpec& c, const ComputeModel& compute,
                         const TrainingConfig& cfg, const Placement& where) {
  if (stepper.dp()) {
    p.strategy = outcome_from_timeline("dp", strategy.trade_off(), p.timeline);
    p.strategy.has_timeline = false;  // the same as p.timeline
    p.strategy.timeline = {};
    return;
  }
  p.strategy = stepper.strategy_step(c, compute, cfg.record_kernels);
  const StrategyOutcome& o = p.strategy;
  if (o.has_timeline) {
    p.timeline = o.timeline;
    p.host_idle_s = o.timeline.host_idle_s;
    p.optimizer_s = o.timeline.optimizer_s;
    p.strategy.timeline = {};  // kept once, in p.timeline
  } else {
    // No replayed step: the host-bound remainder is what compute and waiting do not explain.
    p.host_idle_s = std::max(0.0, o.step_s - o.compute_s - o.exposed_comm_s);
  }
  p.iteration_s = o.step_s;
  p.compute_s = o.compute_s;
  p.comm_s = o.comm_s;
  p.exposed_comm_s = o.exposed_comm_s;
  p.throughput_samples_per_s = static_cast<double>(cfg.batch_per_gpu) * where.gpus / o.step_s;
}

// What limits the communication (the link whose bandwidth, doubled, shortens it) and the iteration
// (the largest part whose resource, improved 2x, shortens it).
void name_bottlenecks(Prediction& p, const Stepper& stepper, const ClusterSpec& c, const TrainingConfig& cfg,
                      const std::shared_ptr<const ComputeModel>& compute, const Placement& where) {
  if (where.gpus <= 1) {
    p.comm_bottleneck = "none";
  } else {
    const std::vector<GradientBucket> buckets = p.timeline.buckets;
    p.comm_bottleneck = limiting_link(c, p.comm_s, [&](const ClusterSpec& better) { return stepper.comm_s(better, *compute, buckets); });
  }
  const double parts[4] = {p.timeline.compute_bound_s, p.timeline.memory_bound_s, p.exposed_comm_s, p.host_idle_s};
  auto gain_s = [&](Resource r) {
    const ClusterSpec better = apply_what_if(c, improved(r));
    std::shared_ptr<const ComputeModel> m = compute;  // kernel times change with the GPU only
    if (r == Resource::Compute || r == Resource::Memory) {
      m = r == Resource::Compute ? cfg.compute_2x_flops : cfg.compute_2x_memory;
      if (!m) m = std::make_shared<RememberingComputeModel>(cluster_compute_model(cfg.compute_model, better), 4);
    }
    return p.iteration_s - stepper.step(better, *m).first;
  };
  p.bottleneck = bottleneck_rule(parts, p.iteration_s, gain_s);
}

}  // namespace

Prediction predict(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg) {
  if (cfg.batch_per_gpu < 1 || cfg.batch_per_gpu > kMaxBatchPerGpu)
    throw InputError("--batch-per-gpu", "must be in [1, " + std::to_string(kMaxBatchPerGpu) + "], got " + std::to_string(cfg.batch_per_gpu));
  const Placement where = place(c, cfg.gpus);
  // One model for the step and its 1-GPU baseline, which share their kernels: priced once.
  std::shared_ptr<const ComputeModel> compute = cfg.compute;
  if (!compute) compute = std::make_shared<RememberingComputeModel>(cluster_compute_model(cfg.compute_model, c), 4);
  auto algo = make_collective_algorithm(cfg.algo);
  auto strategy = make_strategy(cfg.strategy);
  check_strategy_params(*strategy, cfg.strategy_params);
  const IterationKernels kernels = lower_iteration(g, cfg.batch_per_gpu, cfg.precision, cfg.mode);
  const Stepper stepper(g, kernels, cfg, *algo, *strategy, where);

  Prediction p;
  p.model = g.name;
  p.cluster = c.name;
  p.gpu = c.gpu.name;
  p.precision = precision_name(cfg.precision);
  p.mode = cfg.mode;
  p.algo = algo->name();
  p.compute_model = compute->name();
  p.compute_note = compute->note();
  p.gpus = where.gpus;
  p.nodes = where.nodes;
  p.batch_per_gpu = cfg.batch_per_gpu;
  p.overlap = cfg.overlap.value_or(c.framework.overlap);
  p.timeline = stepper.dp_step(c, *compute, cfg.record_kernels);
  const IterationTimeline& t = p.timeline;
  p.iteration_s = t.iteration_s;
  p.throughput_samples_per_s = static_cast<double>(cfg.batch_per_gpu) * where.gpus / t.iteration_s;
  p.compute_s = t.compute_s;
  p.comm_s = t.comm_s;
  p.exposed_comm_s = t.exposed_comm_s;
  p.host_idle_s = t.host_idle_s;
  p.optimizer_s = t.optimizer_s;
  for (const auto& l : t.layers) p.grad_bytes += l.grad_bytes;
  for (const auto& l : g.layers) p.layer_names.push_back(l.name);

  if (where.gpus == 1) {
    p.single_gpu_iteration_s = t.iteration_s;
  } else {
    TrainingConfig one = cfg;
    one.record_kernels = false;
    p.single_gpu_iteration_s = run_schedule(g, kernels, c, one, *compute, *algo, place(c, 1)).iteration_s;
  }
  apply_strategy_step(p, stepper, *strategy, c, *compute, cfg, where);
  p.scaling_efficiency = p.single_gpu_iteration_s / p.iteration_s;
  p.tokens_per_sample = g.tokens_per_sample();
  p.throughput_tokens_per_s = p.throughput_samples_per_s * static_cast<double>(p.tokens_per_sample);
  name_bottlenecks(p, stepper, c, cfg, compute, where);
  return p;
}

}  // namespace dtsim
