#include "sim/strategies/easgd.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "network/topology.hpp"

namespace dtsim {

EasgdLinks easgd_links(const Placement& where, const ClusterSpec& c) {
  EasgdLinks l;
  if (where.nodes > 1) {
    l.alpha_s = c.collectives.base_latency_s + c.inter.latency_s;
    l.beta_master_s_per_byte = 1.0 / std::min(c.intra.bandwidth_Bps, c.inter.node_bandwidth_Bps());
  } else {
    l.alpha_s = c.collectives.base_latency_s + c.intra.latency_s;
    l.beta_master_s_per_byte = 1.0 / c.intra.bandwidth_Bps;
  }
  return l;
}

double easgd_tree_exchange_s(double bytes, const Placement& where, const ClusterSpec& c) {
  if (where.gpus <= 1 || bytes <= 0) return 0;
  const AlphaBeta t = textbook_costs(where, c);
  // Tree levels inside a node use the GPU's own link; levels across nodes one GPU per node, so the
  // lesser of its link and the node's network.
  const int intra_levels = ceil_log2(t.local), inter_levels = ceil_log2(t.nodes);
  const double beta_across = 1.0 / std::min(c.intra.bandwidth_Bps, c.inter.node_bandwidth_Bps());
  const double one_pass = intra_levels * (t.alpha_intra_s + bytes * t.beta_intra_s_per_byte) + inter_levels * (t.alpha_inter_s + bytes * beta_across);
  return t.base_s + 2 * one_pass + (intra_levels + inter_levels) * bytes * t.gamma_s_per_byte;
}

std::string EasgdStrategy::name() const {
  switch (kind_) {
    case Sync: return "easgd-sync";
    case Async: return "easgd-async";
    case AsyncMomentum: return "measgd-async";
    default: return "hogwild-easgd";
  }
}

std::string EasgdStrategy::trade_off() const {
  const std::string elastic = "workers drift apart between exchanges (elastic averaging, not exact gradients)";
  switch (kind_) {
    case Sync: return elastic + "; a centre copy of the parameters";
    case Async: return elastic + "; staleness: the centre a worker reads is as old as the queue at the master; a centre copy of the parameters";
    case AsyncMomentum: return elastic + "; staleness as Async EASGD; extra memory: a momentum buffer per worker";
    default: return elastic + "; staleness: workers train on with a centre that may be one exchange old, unlocked updates may overwrite each other";
  }
}

StrategyOutcome EasgdStrategy::predict(const StrategyContext& ctx) const {
  const int tau = tau_or_default(ctx.params, "easgd");

  // Each worker's own step: no gradient all-reduce (the elastic update is one more elementwise pass
  // over the parameters, left out).
  const IterationTimeline local = ctx.single_gpu(ctx.batch_per_gpu);
  const double t_c = local.iteration_s;
  const double n = 4.0 * static_cast<double>(ctx.g.params());  // FP32 parameters
  const double p = ctx.where.gpus;
  const EasgdLinks links = easgd_links(ctx.where, ctx.c);
  const double t_x = ctx.where.gpus > 1 ? links.exchange_s(n) : 0;

  double round_s = 0, comm_round_s = 0;  // one worker's tau steps, and the communication in them
  switch (kind_) {
    case Sync:
      comm_round_s = easgd_tree_exchange_s(n, ctx.where, ctx.c);
      round_s = tau * t_c + comm_round_s;
      break;
    case Async:
    case AsyncMomentum:
      // The master serves p exchanges of t_x per round, one at a time: a round lasts at least p·t_x.
      round_s = std::max(tau * t_c + t_x, p * t_x);
      comm_round_s = round_s - tau * t_c;
      break;
    case Hogwild: {
      // Latencies overlap at the unlocked master; the bytes of all p exchanges share its NIC.
      const double master_busy_s = ctx.where.gpus > 1 ? 2 * links.alpha_s + p * 2 * n * links.beta_master_s_per_byte : 0;
      comm_round_s = std::max(t_x, master_busy_s);
      round_s = std::max(tau * t_c, comm_round_s);  // the worker trains on while its exchange is in flight
      break;
    }
  }
  StrategyOutcome o;
  o.name = name();
  o.trade_off = trade_off();
  o.step_s = round_s / tau;
  o.compute_s = local.compute_s;
  o.comm_s = comm_round_s / tau;
  o.exposed_comm_s = o.step_s - t_c;
  o.comm_share = o.step_s > 0 ? std::min(1.0, o.comm_s / o.step_s) : 0;
  o.parameters = {{"tau", tau}, {"exchange_s", kind_ == Sync ? comm_round_s : t_x}};
  return o;
}

// Ranks: the order of `dtsim strategies` (sim/strategy.hpp).
DTSIM_REGISTER(StrategyRegistry, {"easgd-sync", 3, "Sync EASGD: every tau steps, tree reduce of the workers' parameters to the centre and tree broadcast back",
                                  [] { return std::make_unique<EasgdStrategy>(EasgdStrategy::Sync); }})
DTSIM_REGISTER(StrategyRegistry, {"easgd-async", 4, "Async EASGD: every tau steps, each worker swaps parameters with a master that serves one worker at a time",
                                  [] { return std::make_unique<EasgdStrategy>(EasgdStrategy::Async); }})
DTSIM_REGISTER(StrategyRegistry, {"measgd-async", 5, "Async MEASGD: Async EASGD with momentum on the workers (same messages)",
                                  [] { return std::make_unique<EasgdStrategy>(EasgdStrategy::AsyncMomentum); }})
DTSIM_REGISTER(StrategyRegistry, {"hogwild-easgd", 6, "Hogwild EASGD: lock-free master; exchanges share the master's NIC and workers do not wait for them",
                                  [] { return std::make_unique<EasgdStrategy>(EasgdStrategy::Hogwild); }})

}  // namespace dtsim
