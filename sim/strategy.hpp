#pragma once
// Training strategies (docs/design.md §5, Beyond data parallelism): how workers share what they
// learn. `dp` is today's bucketed all-reduce data parallelism; the others (hierarchical all-reduce,
// DASO, the EASGD family, a parameter server, the Pr x Pc grid of integrated model/batch/domain
// parallelism) change what is communicated, how often and over which links. Like the compute models
// and the collective algorithms, a strategy is a small interface with one implementation each
// (sim/strategies/), registered there by name (DTSIM_REGISTER). Default parameters (tau,
// global_skip, ...) live in configs/strategies.json.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/json_util.hpp"
#include "core/registry.hpp"
#include "workload/graph.hpp"
#include "workload/kernels.hpp"
#include "sim/memory.hpp"
#include "sim/schedule.hpp"
#include "hardware/placement.hpp"
#include "network/cluster.hpp"
#include "network/collective.hpp"
#include "compute/compute_model.hpp"

namespace dtsim {

// A strategy's parameters as the user gave them; 0 (or -1 for batches_to_wait) takes the default
// of configs/strategies.json.
struct StrategyParams {
  int global_skip = 0;       // daso: steps between global averagings
  int batches_to_wait = -1;  // daso: steps after which a global averaging is awaited
  int tau = 0;               // easgd family: steps between exchanges with the centre
  int servers = 0;           // ps: parameter servers
  int pr = 0, pc = 0;        // grid: P = Pr (model axis) x Pc (batch axis)
  bool domain = false;       // grid: domain (spatial) parallel convolutions instead of model parallel ones
  std::string shard;         // fsdp: full, grad-op or hybrid (empty: configs/strategies.json's default)
};

// One phase of a strategy's schedule (DASO's blocking warm-up, cycling, blocking cool-down).
struct StrategyPhase {
  std::string name;
  double fraction_of_steps = 1;
  double step_s = 0;
  double comm_s = 0;  // communication per step in this phase, overlapped or not
};

struct StrategyOutcome {
  std::string name = "dp";
  double step_s = 0;          // one training step (the schedule's average where there are phases)
  double compute_s = 0;       // GPU busy with kernels per step
  double comm_s = 0;          // communication per step, overlapped or not
  double exposed_comm_s = 0;  // communication per step that the step waits for
  double comm_share = 0;      // comm_s / step_s, capped at 1 (what the sources report)
  std::string trade_off;      // what the strategy gives up, in plain words
  std::vector<std::pair<std::string, double>> parameters;  // the resolved numbers (tau, ...)
  std::vector<StrategyPhase> phases;                       // empty: one phase
  // Bytes each GPU sends per step over the links, as the bandwidth-optimal (ring) algorithms move
  // them: an all-reduce of S bytes among N GPUs 2 (N - 1) / N S, an all-gather or a reduce-scatter
  // (N - 1) / N S; -1 where the strategy does not count them.
  double comm_bytes = -1;
  // One micro-batch that does not end an optimizer step (gradient accumulation: DDP's no_sync), with
  // what it communicates (FSDP's and ZeRO-3's all-gathers, ZeRO-2's reduce-scatter); -1: the step's
  // forward and backward without communication.
  double micro_step_s = -1;
  double micro_comm_bytes = 0;
  double micro_comm_s = 0, micro_exposed_comm_s = 0;
  bool has_timeline = false;                               // `timeline` is a replayed DDP step
  IterationTimeline timeline;
};

// What a strategy needs to price a step.
struct StrategyContext {
  const Graph& g;
  const ClusterSpec& c;
  const Placement& where;
  int64_t batch_per_gpu;
  Precision precision;
  const ComputeModel& compute;
  const CollectiveAlgorithm& algo;  // the --algo all-reduce
  StrategyParams params;
  // Replays one DDP step (host launches, backward, buckets, optimizer) with each gradient bucket
  // priced by `bucket_s(bytes)`.
  std::function<IterationTimeline(const std::function<double(double)>& bucket_s)> simulate;
  // The same step on one GPU at `batch` samples, without communication.
  std::function<IterationTimeline(int64_t batch)> single_gpu;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  virtual std::string trade_off() const = 0;  // what it gives up, in plain words
  // The parameters it reads, taken from `given`; every other one at its default. Each strategy
  // declares its own, so that which flags apply to which strategy is written once.
  virtual StrategyParams own_params(const StrategyParams& given) const {
    (void)given;
    return {};
  }
  virtual StrategyOutcome predict(const StrategyContext& ctx) const = 0;
  // How it holds parameters, gradients and optimizer state on each GPU, at `grad_accum_steps`
  // micro-batches per step: DDP's replicas unless it shards them (sim/strategies/sharded.hpp).
  virtual MemoryLayout memory_layout(const Graph& g, const Placement& where, const StrategyParams& params, int grad_accum_steps) const {
    (void)g, (void)where, (void)params, (void)grad_accum_steps;
    return {};
  }
  // Whether its price reads the --algo all-reduce, and whether it replays DDP's backward pass with
  // buckets (so that --no-overlap changes it); a flag a strategy does not read is refused.
  virtual bool uses_algo() const { return true; }
  virtual bool uses_overlap() const { return true; }
};

// Strategies by name; each registers itself in its sim/strategies/ file (DTSIM_REGISTER) with its
// one line for `dtsim strategies` as the entry's help. Ranks keep the order users know: dp (0),
// hierarchical, daso, easgd-sync, easgd-async, measgd-async, hogwild-easgd, ps, grid,
// hierarchical-leader, local-sgd (10).
using StrategyRegistry = Registry<Strategy>;
std::unique_ptr<Strategy> make_strategy(const std::string& name);  // InputError("--strategy")
std::vector<std::string> strategy_names();

// configs/strategies.json (DTSIM_CONFIG_DIR applies), parsed once.
const Json& strategy_defaults();
// The strategy's default for `key` in configs/strategies.json (InputError if it is missing).
double strategy_default(const std::string& strategy, const std::string& key);

// The parameters of a strategy that reads only tau (the EASGD family, local SGD).
StrategyParams tau_only(const StrategyParams& given);
// tau as given, else configs/strategies.json's default for `section`; InputError where either is
// below 1.
int tau_or_default(const StrategyParams& given, const std::string& section);

// The all-reduce among nodes of the hierarchical schemes (hardware/placement.hpp): g groups (one per local rank) of one GPU per node,
// each all-reducing bytes / g while sharing the node's network g ways; 0 on one node.
double rails_allreduce_s(double bytes, const Placement& where, const ClusterSpec& c, const CollectiveAlgorithm& algo);

}  // namespace dtsim
