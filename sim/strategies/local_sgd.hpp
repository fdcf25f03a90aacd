#pragma once
// Local SGD (periodic parameter averaging; Stich 2019, Lin et al. 2020 "Don't use large mini-batches,
// use local SGD"): each worker runs plain SGD on its own batches with no gradient communication;
// every tau steps the workers' parameters are all-reduced and divided by P (an exact average, unlike
// EASGD's elastic pull), after the optimizer step, waited for. What `dtsim-harness train
// --average-every K` runs (validation/harness/train.cu).
//   step = t_c + AR(P, n) / tau
// t_c: one GPU's step without communication (its own replayed DDP step on one GPU); n: the FP32
// parameter bytes; AR: the --algo all-reduce over the job's GPUs. The per-step time is the average
// over one period of tau steps (tau - 1 local steps and one that also averages).
#include "sim/strategy.hpp"

namespace dtsim {

class LocalSgdStrategy : public Strategy {
 public:
  std::string name() const override { return "local-sgd"; }
  std::string trade_off() const override;
  StrategyParams own_params(const StrategyParams& given) const override { return tau_only(given); }
  StrategyOutcome predict(const StrategyContext& ctx) const override;
  bool uses_overlap() const override { return false; }  // the averaging follows tau local steps
};

}  // namespace dtsim
