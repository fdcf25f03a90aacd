#pragma once
// The elastic-averaging family (Zhang et al. 2015; You, Buluç, Demmel, SC'17; docs/design.md §5,
// Beyond data parallelism). Each worker trains on its own (no gradient all-reduce); every tau steps
// it exchanges its parameters with a centre x̃: x_i -= η∇ + α(x_i - x̃), x̃ += α Σ(x_i - x̃).
//  easgd-sync:    all workers at once, binary-tree reduce to the centre then tree broadcast
//                 (2·Σ_levels(α + nβ) + ⌈lg p⌉·nγ), waited for.
//  easgd-async:   a master holds x̃ and serves one worker at a time, first come first served; a
//                 worker waits for its own exchange (send x_i, receive x̃: 2(α + nβ_master)) and
//                 for the workers queued before it.
//  measgd-async:  async EASGD with momentum on the workers: the same messages (momentum changes the
//                 updates, not what is sent), one more parameter-sized buffer per worker.
//  hogwild-easgd: the master updates x̃ without a lock, so exchanges proceed side by side, limited
//                 by the master's NIC bandwidth rather than serialised; a worker does not wait for
//                 its exchange and trains on with a stale centre.
#include "sim/strategy.hpp"

namespace dtsim {

// The links of the elastic exchange: the master's link (its node's network across nodes, NVLink
// inside one) and the per-message latency.
struct EasgdLinks {
  double alpha_s = 0;
  double beta_master_s_per_byte = 0;
  double exchange_s(double bytes) const { return 2 * (alpha_s + bytes * beta_master_s_per_byte); }  // x_i up, x̃ down
};
EasgdLinks easgd_links(const Placement& where, const ClusterSpec& c);
// Binary-tree reduce + broadcast of `bytes` over the job's GPUs (the sync variant's exchange).
double easgd_tree_exchange_s(double bytes, const Placement& where, const ClusterSpec& c);

class EasgdStrategy : public Strategy {
 public:
  enum Kind { Sync, Async, AsyncMomentum, Hogwild };
  explicit EasgdStrategy(Kind k) : kind_(k) {}
  std::string name() const override;
  std::string trade_off() const override;
  StrategyParams own_params(const StrategyParams& given) const override { return tau_only(given); }
  StrategyOutcome predict(const StrategyContext& ctx) const override;
  // Exchanges with the centre are priced by their own trees and queues, after local steps.
  bool uses_algo() const override { return false; }
  bool uses_overlap() const override { return false; }

 private:
  Kind kind_;
};

}  // namespace dtsim
