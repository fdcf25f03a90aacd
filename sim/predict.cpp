#include "sim/predict.hpp"

#include <algorithm>
#include <optional>

#include "core/error.hpp"
#include "sim/strategies/data_parallel.hpp"
#include "sim/strategies/sharded.hpp"

namespace dtsim {

// Each bucket's all-reduce by `algo` among the GPUs of `where` on c.
static std::vector<double> allreduce_times(const StepBeforeCollectives& s, const ClusterSpec& c, const CollectiveAlgorithm& algo,
                                           const Placement& where) {
  return bucket_times(s, [&](double bytes) { return algo.time_s(CollectiveOp::AllReduce, bytes, where, c); });
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
      {sp.domain != unset.domain && own.domain != sp.domain, "--domain"},
      {sp.shard != unset.shard && own.shard != sp.shard, "--shard"}};
  for (const auto& [wrong, flag] : misplaced)
    if (wrong) throw InputError(flag, "does not apply to --strategy " + strategy.name());
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
  m.activation_checkpointing = names.activation_checkpointing;
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
  StepPricing pricing(cfg.compute_model);
  auto algo = make_collective_algorithm(cfg.algo);
  const StepBeforeCollectives& s = pricing.before_collectives(g, c, batch, cfg.precision, cfg.mode, false);
  return finish_step(s, allreduce_times(s, c, *algo, place(c, 1)), cfg.overlap.value_or(c.framework.overlap));
}

MemoryLayout training_memory_layout(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg) {
  MemoryLayout m = make_strategy(cfg.strategy)->memory_layout(g, place(c, cfg.gpus), cfg.strategy_params, cfg.grad_accum_steps);
  m.activation_checkpointing = cfg.mode.activation_checkpointing;
  m.grad_accum_steps = cfg.grad_accum_steps;
  return m;
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
// cluster with one resource improved, for the bottleneck and the limiting link. Each cluster's first
// phase comes from the pricing, so the steps that differ only in their collectives share it.
class Stepper {
 public:
  Stepper(const Graph& g, const TrainingConfig& cfg, const CollectiveAlgorithm& algo, const Strategy& strategy, const Placement& where,
          StepPricing& pricing)
      : g_(g), cfg_(cfg), algo_(algo), strategy_(strategy), where_(where), pricing_(pricing) {}

  bool dp() const { return strategy_.name() == "dp"; }
  bool overlap(const ClusterSpec& c) const { return cfg_.overlap.value_or(c.framework.overlap); }
  const StepBeforeCollectives& before(const ClusterSpec& c, int64_t batch, bool record) const {
    return pricing_.before_collectives(g_, c, batch, cfg_.precision, cfg_.mode, record);
  }

  // DDP's step (the dp strategy's, and what the others' shares are read from when they replay none)
  // among the GPUs of `where`.
  IterationTimeline dp_step(const ClusterSpec& c, bool record, const Placement& where) const {
    const StepBeforeCollectives& s = before(c, cfg_.batch_per_gpu, record);
    return finish_step(s, allreduce_times(s, c, algo_, where), overlap(c));
  }
  IterationTimeline dp_step(const ClusterSpec& c, bool record) const { return dp_step(c, record, where_); }

  StrategyOutcome strategy_step(const ClusterSpec& c, bool record) const {
    const StepBeforeCollectives& s = before(c, cfg_.batch_per_gpu, record);
    auto simulate = [&](const std::function<double(double)>& bucket_s) { return finish_step(s, bucket_times(s, bucket_s), overlap(c)); };
    auto single = [&](int64_t batch) {
      const StepBeforeCollectives& one = before(c, batch, false);
      return finish_step(one, allreduce_times(one, c, algo_, place(c, 1)), overlap(c));
    };
    StrategyContext ctx{g_, c, where_, cfg_.batch_per_gpu, cfg_.precision, *pricing_.compute(c), algo_, cfg_.strategy_params, simulate, single};
    return strategy_.predict(ctx);
  }

  // One micro-batch that does not end the step (gradient accumulation): the forward and backward,
  // without the optimizer or communication, as long as the GPU runs them or the host issues them
  // (whichever is longer: a host-bound step's micro-batches are host-bound too), unless the strategy
  // prices its own.
  double micro_step_s(const ClusterSpec& c, const StrategyOutcome* o) const {
    if (o && o->micro_step_s >= 0) return o->micro_step_s;
    const StepBeforeCollectives& s = before(c, cfg_.batch_per_gpu, false);
    return std::max(s.stream.host_s, s.timeline.backward_end_s);
  }
  // The K - 1 micro-batches before the step's last one.
  double accumulation_s(const ClusterSpec& c, const StrategyOutcome* o) const {
    return cfg_.grad_accum_steps > 1 ? (cfg_.grad_accum_steps - 1) * micro_step_s(c, o) : 0;
  }

  // The step's time (all its micro-batches) and its communication per step on cluster c.
  std::pair<double, double> step(const ClusterSpec& c) const {
    if (dp()) {
      const StepBeforeCollectives& s = before(c, cfg_.batch_per_gpu, false);
      const std::vector<double> bucket_s = allreduce_times(s, c, algo_, where_);
      double comm_s = 0;
      for (double b : bucket_s) comm_s += b;
      return {finish_step_s(s, bucket_s.data(), overlap(c)) + accumulation_s(c, nullptr), comm_s};
    }
    const StrategyOutcome o = strategy_step(c, false);
    return {o.step_s + accumulation_s(c, &o), o.comm_s};
  }

  // Communication per step on cluster c; dp's is its buckets' all-reduces, whatever the schedule.
  double comm_s(const ClusterSpec& c, const std::vector<GradientBucket>& buckets) const {
    if (!dp()) return step(c).second;
    double s = 0;
    for (const auto& b : buckets) s += algo_.time_s(CollectiveOp::AllReduce, static_cast<double>(b.bytes), where_, c);
    return s;
  }

 private:
  const Graph& g_;
  const TrainingConfig& cfg_;
  const CollectiveAlgorithm& algo_;
  const Strategy& strategy_;
  const Placement& where_;
  StepPricing& pricing_;
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
void apply_strategy_step(Prediction& p, const Stepper& stepper, const Strategy& strategy, const ClusterSpec& c, const TrainingConfig& cfg,
                         const Placement& where) {
  if (stepper.dp()) {
    p.strategy = outcome_from_timeline("dp", strategy.trade_off(), p.timeline);
    p.strategy.has_timeline = false;  // the same as p.timeline
    p.strategy.timeline = {};
    p.strategy.comm_bytes = allreduce_wire_bytes(static_cast<double>(p.grad_bytes), where.gpus);
    return;
  }
  p.strategy = stepper.strategy_step(c, cfg.record_kernels);
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
void name_bottlenecks(Prediction& p, const Stepper& stepper, const ClusterSpec& c, const Placement& where) {
  if (where.gpus <= 1) {
    p.comm_bottleneck = "none";
  } else {
    const std::vector<GradientBucket> buckets = p.timeline.buckets;
    p.comm_bottleneck = limiting_link(c, p.comm_s, [&](const ClusterSpec& better) { return stepper.comm_s(better, buckets); });
  }
  const double parts[4] = {p.timeline.compute_bound_s, p.timeline.memory_bound_s, p.exposed_comm_s, p.host_idle_s};
  auto gain_s = [&](Resource r) { return p.iteration_s - stepper.step(apply_what_if(c, improved(r))).first; };
  p.bottleneck = bottleneck_rule(parts, p.iteration_s, gain_s);
}

}  // namespace

Prediction predict(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg) {
  StepPricing pricing(cfg.compute_model);
  return predict(g, c, cfg, pricing);
}

Prediction predict(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg, StepPricing& pricing) {
  if (cfg.grad_accum_steps < 1 || cfg.grad_accum_steps > kMaxGradAccumSteps)
    throw InputError("--grad-accum-steps", "must be in [1, " + std::to_string(kMaxGradAccumSteps) + "], got " + std::to_string(cfg.grad_accum_steps));
  if (cfg.batch_per_gpu < 1 || cfg.batch_per_gpu > kMaxBatchPerGpu)
    throw InputError("--batch-per-gpu", "must be in [1, " + std::to_string(kMaxBatchPerGpu) + "], got " + std::to_string(cfg.batch_per_gpu));
  if (pricing.compute_model_name() != cfg.compute_model)
    throw std::logic_error("predict: the pricing prices with " + pricing.compute_model_name() + ", the configuration asks for " + cfg.compute_model);
  const Placement where = place(c, cfg.gpus);
  const std::shared_ptr<const ComputeModel> compute = pricing.compute(c);
  auto algo = make_collective_algorithm(cfg.algo);
  auto strategy = make_strategy(cfg.strategy);
  check_strategy_params(*strategy, cfg.strategy_params);
  const Stepper stepper(g, cfg, *algo, *strategy, where, pricing);

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
  p.overlap = stepper.overlap(c);
  p.timeline = stepper.dp_step(c, cfg.record_kernels);
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
    const StepBeforeCollectives& s = stepper.before(c, cfg.batch_per_gpu, false);
    p.single_gpu_iteration_s = finish_step_s(s, allreduce_times(s, c, *algo, place(c, 1)).data(), p.overlap);
  }
  apply_strategy_step(p, stepper, *strategy, c, cfg, where);
  if (cfg.grad_accum_steps > 1) {
    // K micro-batches per optimizer step: K - 1 without the gradient reduction (no_sync), then the
    // step priced above. Time to train counts samples: K x batch per GPU x GPUs per step.
    const int K = cfg.grad_accum_steps;
    const double extra = stepper.accumulation_s(c, stepper.dp() ? nullptr : &p.strategy);
    const double micro_compute = t.compute_s - t.optimizer_s;
    p.iteration_s += extra;
    p.strategy.step_s += extra;
    p.compute_s += (K - 1) * micro_compute;
    p.strategy.compute_s += (K - 1) * micro_compute;
    p.single_gpu_iteration_s += (K - 1) * stepper.micro_step_s(c, nullptr);
    p.throughput_samples_per_s = static_cast<double>(cfg.batch_per_gpu) * K * where.gpus / p.iteration_s;
    if (p.strategy.comm_bytes >= 0) p.strategy.comm_bytes += (K - 1) * p.strategy.micro_comm_bytes;
    p.comm_s += (K - 1) * p.strategy.micro_comm_s;
    p.exposed_comm_s += (K - 1) * p.strategy.micro_exposed_comm_s;
    p.strategy.comm_s = p.comm_s;
    p.strategy.exposed_comm_s = p.exposed_comm_s;
    p.host_idle_s = std::max(0.0, p.iteration_s - p.compute_s - p.exposed_comm_s);
    if (p.iteration_s > 0) p.strategy.comm_share = std::min(1.0, p.comm_s / p.iteration_s);
  }
  p.grad_accum_steps = cfg.grad_accum_steps;
  p.scaling_efficiency = p.single_gpu_iteration_s / p.iteration_s;
  p.tokens_per_sample = g.tokens_per_sample();
  p.throughput_tokens_per_s = p.throughput_samples_per_s * static_cast<double>(p.tokens_per_sample);
  name_bottlenecks(p, stepper, c, where);
  return p;
}

}  // namespace dtsim
