#pragma once
// DASO (Coquelin et al., 2021/22; docs/design.md §5, Beyond data parallelism): every step, a
// node-local all-reduce of gradients over the node's fast links; every `global_skip` steps, a
// global all-reduce of the parameters among one GPU per node (one group per local rank, each with
// 1/g of the parameters, sharing the node's NICs), started in the background and awaited
// `batches_to_wait` steps later. Blocking phases (the start and end of training) synchronise
// globally every step, with bf16 messages.
#include "sim/strategy.hpp"

namespace dtsim {

class DasoStrategy : public Strategy {
 public:
  std::string name() const override { return "daso"; }
  std::string trade_off() const override;
  StrategyParams own_params(const StrategyParams& given) const override {
    StrategyParams p;
    p.global_skip = given.global_skip;
    p.batches_to_wait = given.batches_to_wait;
    return p;
  }
  StrategyOutcome predict(const StrategyContext& ctx) const override;
};

}  // namespace dtsim
