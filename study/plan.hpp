#pragma once
// dtsim plan: the fastest or cheapest way to train a model, searched over every combination of
// clusters, GPU counts, batch sizes, precisions, strategies, all-reduce algorithms, hardware what-ifs
// and DDP bucket sizes (docs/plan.md).
//
// Every configuration's iteration time is predict()'s (sim/predict.hpp), bit for bit; the search
// gets its speed by sharing what configurations share (docs/plan.md, "How it is fast"):
//   - kernel times depend on the model, the GPU, the batch and the precision: one compute model per
//     cluster what-if, each kernel list priced once for every GPU count, bucket size and algorithm;
//   - DDP's step splits into what the GPU count does not change (the forward and backward passes,
//     when each bucket's gradients are ready, the optimizer's kernels), replayed once per (cluster,
//     what-if, bucket size, batch, precision), and the all-reduces, priced once per (bucket bytes,
//     placement, network, algorithm) for every batch size and precision; a configuration is then the
//     bucket chain and the optimizer's kernels (the same arithmetic as sim/schedule.cpp);
//   - whole regions that cannot be feasible are counted, not priced: a (batch, precision) that does
//     not fit in GPU memory, GPU counts beyond the global-batch limit or the cluster;
//   - configurations are split over threads by GPU count; the outcome does not depend on how many.
// Other strategies than dp run predict() itself per configuration (still sharing kernel times).
// The configurations reported (the Pareto front, the fastest, the cheapest, the top K) are checked
// against predict() before they are returned: a difference is a bug, and the whole search is then
// redone with predict() per configuration (slow, right) and PlanResult::note says so.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/predict.hpp"
#include "sim/run_spec.hpp"
#include "sim/whatif.hpp"

namespace dtsim {

struct PlanSpec {
  std::string model;                          // zoo name, model JSON or ONNX file
  bool allow_unknown_ops = false;
  int64_t seq_len = 0;                        // language models: tokens per sequence (0: the model's context)
  std::vector<std::string> clusters{"h100-sxm"};  // presets or files
  std::optional<int64_t> cluster_nodes;       // every cluster's node count, if given
  std::string framework = kDefaultFrameworkProfile;
  std::string compute_model = "auto";
  std::optional<bool> overlap;
  std::vector<int64_t> gpus{1};
  std::vector<int64_t> batches;
  std::vector<std::string> precisions{"fp32"};
  std::vector<StepMode> modes{StepMode{}};  // memory format, optimizer and execution: each one searched
  std::vector<std::string> strategies{"dp"};
  StrategyParams strategy_params;
  std::vector<std::string> algos{"auto"};
  std::vector<WhatIf> what_ifs{WhatIf{}};
  std::vector<double> bucket_mbs;  // MiB; empty: each cluster's own (PyTorch's 25)
  // The goal and the limits.
  int64_t dataset_size = 0;
  double epochs = 0;
  std::optional<double> price_per_gpu_hour;  // overrides the clusters' price_per_gpu_hour
  std::optional<double> deadline_s, budget;
  std::optional<int64_t> max_global_batch;
  // A job of more GPUs than a node holds takes whole nodes unless this is set (a partial node shares
  // its node's NICs with another job, and no scheduler hands one out by default).
  bool partial_nodes = false;
  std::string objective = "time";  // the top K's order: time (to train) or cost
  size_t top = 10;
  unsigned threads = 0;  // 0: every core
};

// One configuration and what it takes.
struct PlanConfig {
  uint64_t index = 0;  // position in the search (the axes' cross product, in PlanSpec's order)
  std::string cluster, gpu, precision, strategy, algo;
  StepMode mode;
  WhatIf what_if;
  int64_t gpus = 0, nodes = 0, batch_per_gpu = 0;
  int64_t global_batch = 0, steps_per_epoch = 0;
  double nic_Gbps = 0;   // the NIC line rate the configuration runs at (what-if applied)
  double bucket_mb = 0;  // DDP's bucket size, MiB
  double iteration_s = 0, time_to_train_s = 0, gpu_hours = 0, cost = 0, price_per_gpu_hour = 0;
  int64_t steps = 0;
  // What holds its step back, from its own prediction (Prediction::bottleneck, comm_bottleneck), and
  // the share of the step the GPU waits for the host.
  std::string bottleneck, comm_bottleneck;
  double host_idle_share = 0, scaling_efficiency = 1;
};

struct PlanResult {
  uint64_t evaluated = 0;  // configurations searched: each was priced or skipped by a rule below
  uint64_t priced = 0;     // of which had their iteration time computed
  uint64_t feasible = 0;
  // Skipped without pricing: beyond the cluster's GPUs, beyond --max-global-batch, out of GPU memory;
  // priced and over the deadline or the budget.
  uint64_t over_capacity = 0, partial_node = 0, over_global_batch = 0, out_of_memory = 0, over_deadline = 0, over_budget = 0;
  std::vector<PlanConfig> pareto;  // time to train against cost, fastest first
  std::optional<PlanConfig> fastest, cheapest;
  std::vector<PlanConfig> top;     // by the objective
  // Feasible configurations that take exactly as long as the fastest, and cost exactly what the
  // cheapest costs (they differ in GPU count, cluster or batch but not in the outcome).
  uint64_t fastest_ties = 0, cheapest_ties = 0;
  std::string objective;
  unsigned threads = 1;
  // Empty unless the fast search had to be redone with predict() per configuration (a bug; it says so).
  std::string note;
};

// Checks the spec (InputError naming the flag) before any work.
void check_plan(const PlanSpec& s);
uint64_t plan_size(const PlanSpec& s);
// `tick(n)` reports n more configurations done (progress bars); called from one thread at a time.
PlanResult run_plan(const PlanSpec& s, const std::function<void(size_t)>& tick = {});

// The reference search of the plan's speed budget (bench/README.md), which bench/ times (BM_Plan1M) and
// tests/test_plan.cpp checks against predict(): resnet50 on ImageNet for 90 epochs over 4 presets x
// GPUs 1..1024 x 8 batch sizes x 2 precisions x 4 NIC rates x 4 bucket sizes, 1,048,576 configurations.
PlanSpec reference_plan_1m();

}  // namespace dtsim
