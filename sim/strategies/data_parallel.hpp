#pragma once
// Synchronous data parallelism: every step, every GPU's gradients are summed before the optimizer.
// `dp` all-reduces DDP's buckets with the --algo algorithm (today's behaviour); `hierarchical`
// reduce-scatters inside each node, all-reduces among the nodes (one ring per local rank, i.e. per
// rail) and all-gathers inside each node; `ps` pushes each bucket to S parameter servers and pulls
// the sum back (docs/design.md §4, Collectives: 2·n·max(p/S, 1)·β_server + 2α per bucket);
// `hierarchical-leader` reduces each bucket to one GPU per node, all-reduces the whole bucket among
// those leaders and broadcasts it inside the node (each phase priced by the --algo collective on
// its own GPUs: the node's, then one per node; what
// `dtsim-harness train --allreduce hierarchical-leader` runs).
#include "sim/strategy.hpp"

namespace dtsim {

// A strategy outcome read off one replayed DDP step.
StrategyOutcome outcome_from_timeline(const std::string& name, const std::string& trade_off, const IterationTimeline& t);

class DataParallelStrategy : public Strategy {
 public:
  enum Kind { Flat, Hierarchical, ParameterServer, HierarchicalLeader };
  explicit DataParallelStrategy(Kind k) : kind_(k) {}
  std::string name() const override;
  std::string trade_off() const override;
  StrategyParams own_params(const StrategyParams& given) const override {
    StrategyParams p;
    if (kind_ == ParameterServer) p.servers = given.servers;  // the other kinds take none
    return p;
  }
  StrategyOutcome predict(const StrategyContext& ctx) const override;
  // The parameter server prices its push and pull itself (the "ps" collective).
  bool uses_algo() const override { return kind_ != ParameterServer; }

 private:
  Kind kind_;
};

}  // namespace dtsim
