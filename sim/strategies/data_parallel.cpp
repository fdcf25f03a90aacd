#include "sim/strategies/data_parallel.hpp"

#include <algorithm>

namespace dtsim {

StrategyOutcome outcome_from_timeline(const std::string& name, const std::string& trade_off, const IterationTimeline& t) {
  StrategyOutcome o;
  o.name = name;
  o.trade_off = trade_off;
  o.step_s = t.iteration_s;
  o.compute_s = t.compute_s;
  o.comm_s = t.comm_s;
  o.exposed_comm_s = t.exposed_comm_s;
  o.comm_share = t.iteration_s > 0 ? std::min(1.0, t.comm_s / t.iteration_s) : 0;
  o.has_timeline = true;
  o.timeline = t;
  return o;
}

std::string DataParallelStrategy::name() const {
  switch (kind_) {
    case Hierarchical: return "hierarchical";
    case ParameterServer: return "ps";
    case HierarchicalLeader: return "hierarchical-leader";
    default: return "dp";
  }
}

std::string DataParallelStrategy::trade_off() const {
  switch (kind_) {
    case Hierarchical: return "nothing in accuracy; three collectives per bucket instead of one (more latency for small buckets)";
    case ParameterServer:
      return "nothing in accuracy (synchronous); every byte crosses the servers' NICs, which become the bottleneck when workers outnumber servers";
    case HierarchicalLeader:
      return "nothing in accuracy; one GPU per node carries the whole bucket across the network (the node's other NIC rails idle)";
    default: return "nothing in accuracy; every step waits for an all-reduce over the job's slowest link";
  }
}

StrategyOutcome DataParallelStrategy::predict(const StrategyContext& ctx) const {
  if (kind_ == Flat) {
    auto bucket = [&](double bytes) { return ctx.algo.time_s(CollectiveOp::AllReduce, bytes, ctx.where, ctx.c); };
    return outcome_from_timeline(name(), trade_off(), ctx.simulate(bucket));
  }
  if (kind_ == Hierarchical) {
    // Three separate collectives per bucket, as implementations of it issue them (Horovod's
    // hierarchical all-reduce; the harness's --allreduce hierarchical), each priced by --algo on its
    // own GPUs: each pays its own fixed cost. Measured on one 4-H100 node split 2 x 2, the textbook
    // single-call pricing (--algo hierarchical) came out faster than dp where NCCL was 2-14% slower.
    const Placement& w = ctx.where;
    const Placement node = node_placement(w);
    auto bucket = [&](double bytes) {
      return ctx.algo.time_s(CollectiveOp::ReduceScatter, bytes, node, ctx.c) + rails_allreduce_s(bytes, w, ctx.c, ctx.algo) +
             ctx.algo.time_s(CollectiveOp::AllGather, bytes, node, ctx.c);
    };
    StrategyOutcome o = outcome_from_timeline(name(), trade_off(), ctx.simulate(bucket));
    o.parameters = {{"gpus_per_node", w.local_gpus()}, {"nodes", w.nodes}};
    return o;
  }
  if (kind_ == HierarchicalLeader) {
    const Placement& w = ctx.where;
    const Placement node = node_placement(w), leaders = one_per_node_placement(w);
    auto bucket = [&](double bytes) {
      return ctx.algo.time_s(CollectiveOp::Reduce, bytes, node, ctx.c) + ctx.algo.time_s(CollectiveOp::AllReduce, bytes, leaders, ctx.c) +
             ctx.algo.time_s(CollectiveOp::Broadcast, bytes, node, ctx.c);
    };
    StrategyOutcome o = outcome_from_timeline(name(), trade_off(), ctx.simulate(bucket));
    o.parameters = {{"gpus_per_node", w.local_gpus()}, {"nodes", w.nodes}};
    return o;
  }
  // Parameter server: --servers, else configs/strategies.json, else the cluster's own setting
  // (0 there: one server per node of the job).
  ClusterSpec c = ctx.c;
  int servers = ctx.params.servers > 0 ? ctx.params.servers : static_cast<int>(strategy_default("ps", "servers"));
  if (servers > 0) c.collectives.parameter_server.servers = servers;
  const int effective = c.collectives.parameter_server.servers > 0 ? c.collectives.parameter_server.servers : ctx.where.nodes;
  auto algo = make_collective_algorithm("ps");
  auto bucket = [&](double bytes) { return algo->time_s(CollectiveOp::AllReduce, bytes, ctx.where, c); };
  StrategyOutcome o = outcome_from_timeline(name(), trade_off(), ctx.simulate(bucket));
  o.parameters = {{"servers", effective}};
  return o;
}

// Ranks: the order of `dtsim strategies` (sim/strategy.hpp).
DTSIM_REGISTER(StrategyRegistry, {"dp", 0, "synchronous data parallelism: DDP's gradient buckets all-reduced with --algo, overlapped with the backward pass",
                                  [] { return std::make_unique<DataParallelStrategy>(DataParallelStrategy::Flat); }})
DTSIM_REGISTER(StrategyRegistry, {"hierarchical", 1,
                                  "synchronous data parallelism, each bucket reduce-scattered inside the node, all-reduced among nodes (one collective per rail), all-gathered inside the node, each with --algo",
                                  [] { return std::make_unique<DataParallelStrategy>(DataParallelStrategy::Hierarchical); }})
DTSIM_REGISTER(StrategyRegistry, {"ps", 7,
                                  "synchronous data parallelism through S parameter servers (gRPC-style): each bucket pushed to and pulled from the servers' NICs",
                                  [] { return std::make_unique<DataParallelStrategy>(DataParallelStrategy::ParameterServer); }})
DTSIM_REGISTER(StrategyRegistry, {"hierarchical-leader", 9,
                                  "synchronous data parallelism, each bucket reduced to one GPU per node, all-reduced among those leaders, broadcast inside the node",
                                  [] { return std::make_unique<DataParallelStrategy>(DataParallelStrategy::HierarchicalLeader); }})

}  // namespace dtsim
