#include "sim/strategies/local_sgd.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace dtsim {

std::string LocalSgdStrategy::trade_off() const {
  return "workers drift apart for tau - 1 steps (the average of locally trained models, not of gradients); the effective batch per update is "
         "one GPU's, so more steps may be needed for the same accuracy";
}

StrategyOutcome LocalSgdStrategy::predict(const StrategyContext& ctx) const {
  const int tau = tau_or_default(ctx.params, "local-sgd");
  const IterationTimeline local = ctx.single_gpu(ctx.batch_per_gpu);
  const double t_c = local.iteration_s;
  const double n = 4.0 * static_cast<double>(ctx.g.params());  // FP32 master parameters
  const double avg_s = ctx.where.gpus > 1 ? ctx.algo.time_s(CollectiveOp::AllReduce, n, ctx.where, ctx.c) : 0;
  StrategyOutcome o;
  o.name = name();
  o.trade_off = trade_off();
  o.step_s = t_c + avg_s / tau;
  o.compute_s = local.compute_s;
  o.comm_s = avg_s / tau;
  o.exposed_comm_s = avg_s / tau;  // after the update, nothing to hide it behind
  o.comm_share = o.step_s > 0 ? std::min(1.0, o.comm_s / o.step_s) : 0;
  o.parameters = {{"tau", tau}, {"parameter_allreduce_s", avg_s}, {"local_step_s", t_c}, {"averaging_step_s", t_c + avg_s}};
  return o;
}

DTSIM_REGISTER(StrategyRegistry, {"local-sgd", 10,  // rank: the order of `dtsim strategies` (sim/strategy.hpp)
                                  "local SGD: no gradient all-reduce; every tau steps the parameters are all-reduced and averaged (sum / P), waited for",
                                  [] { return std::make_unique<LocalSgdStrategy>(); }})

}  // namespace dtsim
