#include "sim/strategies/daso.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "sim/strategies/data_parallel.hpp"

namespace dtsim {

std::string DasoStrategy::trade_off() const {
  return "staleness: nodes see each other's parameters only every global_skip steps, batches_to_wait steps late; bf16 rounding of the blocking "
         "global averages; needs a blocking warm-up and cool-down";
}

StrategyOutcome DasoStrategy::predict(const StrategyContext& ctx) const {
  const StrategyParams& sp = ctx.params;
  if (sp.global_skip < 0) throw InputError("--global-skip", "must be >= 1");
  if (sp.batches_to_wait < -1) throw InputError("--batches-to-wait", "must be >= 0");
  const int skip = sp.global_skip > 0 ? sp.global_skip : static_cast<int>(strategy_default("daso", "global_skip"));
  const int wait = sp.batches_to_wait >= 0 ? sp.batches_to_wait : static_cast<int>(strategy_default("daso", "batches_to_wait"));
  const double f_start = strategy_default("daso", "blocking_fraction_start"), f_end = strategy_default("daso", "blocking_fraction_end");
  if (skip < 1) throw InputError("--global-skip", "must be >= 1");
  if (f_start < 0 || f_end < 0 || f_start + f_end > 1) throw InputError("configs/strategies.json", "$.daso blocking fractions must be in [0, 1] and sum to <= 1");

  // Every step: DDP's buckets all-reduced among the node's GPUs only.
  const Placement& w = ctx.where;
  const Placement node = node_placement(w);
  auto local_bucket = [&](double bytes) { return ctx.algo.time_s(CollectiveOp::AllReduce, bytes, node, ctx.c); };
  const IterationTimeline local = ctx.simulate(local_bucket);
  const double t_local = local.iteration_s;

  // The global average of the parameters (FP32 master weights: 4 bytes each).
  const double param_bytes = 4.0 * static_cast<double>(ctx.g.params());
  const double global_fp32_s = rails_allreduce_s(param_bytes, w, ctx.c, ctx.algo);
  const double global_bf16_s = rails_allreduce_s(param_bytes / 2, w, ctx.c, ctx.algo);

  // Cycling: a global average every `skip` steps runs behind the next min(wait, skip) local steps
  // (a later one cannot start before the NICs are free); only what sticks out is waited for.
  const double hidden_s = std::min(wait, skip) * t_local;
  const double cyc_exposed = std::max(0.0, global_fp32_s - hidden_s) / skip;
  StrategyPhase cycling{"cycling", 1 - f_start - f_end, t_local + cyc_exposed, local.comm_s + global_fp32_s / skip};
  // Blocking: a bf16 global average every step, waited for.
  StrategyPhase blocking{"blocking", f_start + f_end, t_local + global_bf16_s, local.comm_s + global_bf16_s};

  StrategyOutcome o = outcome_from_timeline(name(), trade_off(), local);
  o.step_s = cycling.fraction_of_steps * cycling.step_s + blocking.fraction_of_steps * blocking.step_s;
  o.comm_s = cycling.fraction_of_steps * cycling.comm_s + blocking.fraction_of_steps * blocking.comm_s;
  o.exposed_comm_s = local.exposed_comm_s + (o.step_s - t_local);
  o.comm_share = std::min(1.0, o.comm_s / o.step_s);
  o.phases = {cycling, blocking};
  o.parameters = {{"global_skip", skip},
                  {"batches_to_wait", wait},
                  {"global_allreduce_fp32_s", global_fp32_s},
                  {"global_allreduce_bf16_s", global_bf16_s}};
  return o;
}

DTSIM_REGISTER(StrategyRegistry, {"daso", 2,  // rank: the order of `dtsim strategies` (sim/strategy.hpp)
                                  "DASO: node-local all-reduce every step; global parameter averaging among nodes every global_skip steps, awaited batches_to_wait steps later",
                                  [] { return std::make_unique<DasoStrategy>(); }})

}  // namespace dtsim
