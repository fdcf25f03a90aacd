#pragma once
// One prediction: a model, a cluster and a training configuration in; iteration time, its
// breakdown, throughput, weak-scaling efficiency and the bottleneck out.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "workload/graph.hpp"
#include "workload/kernels.hpp"
#include "sim/pricing.hpp"
#include "sim/run_spec.hpp"
#include "sim/schedule.hpp"
#include "sim/strategy.hpp"
#include "sim/whatif.hpp"
#include "network/cluster.hpp"
#include "network/collective.hpp"
#include "compute/compute_model.hpp"

namespace dtsim {

// One configuration to predict: the run's settings (algo, compute model, overlap, strategy), its
// size and precision, and what predictions may share.
struct TrainingConfig : TrainingSettings {
  int64_t gpus = 1;
  int64_t batch_per_gpu = 1;
  Precision precision = Precision::FP32;
  StepMode mode;  // memory format, optimizer, execution
  bool record_kernels = false;
};

// The configuration `run` names (one GPU, batch 1 until set): its settings, its precision parsed
// (InputError("--precision")).
TrainingConfig training_config(const RunSpec& run);
// The names checked: InputError naming --memory-format, --optimizer or --execution.
StepMode parse_step_mode(const StepModeNames& names);

struct Prediction {
  std::string model, cluster, gpu, precision, algo, compute_model;
  StepMode mode;  // what was priced: memory format, optimizer, execution
  std::string compute_note;  // what the kernel times come from, in one line
  int64_t gpus = 0, nodes = 0, batch_per_gpu = 0;
  int grad_accum_steps = 1;  // micro-batches per optimizer step: a step trains batch_per_gpu x this x gpus samples
  bool overlap = true;
  double iteration_s = 0;
  double throughput_samples_per_s = 0;
  // Language models: tokens per sample (the sequence length) and tokens per second; 0 otherwise.
  int64_t tokens_per_sample = 0;
  double throughput_tokens_per_s = 0;
  double compute_s = 0, comm_s = 0, exposed_comm_s = 0, host_idle_s = 0, optimizer_s = 0;
  double single_gpu_iteration_s = 0;
  double scaling_efficiency = 1;  // t(1 GPU) / t(P GPUs) at equal batch per GPU
  std::string bottleneck;         // compute, memory, communication or host: bottleneck_rule()
  // What limits the communication: the link whose 2x bandwidth shortens it most ("intra-node
  // nvswitch", "inter-node network"); "per-step latency" where neither link's bandwidth changes it
  // but shorter latencies do; "collective library's own limits" where neither does; "none" on one GPU.
  std::string comm_bottleneck;
  int64_t grad_bytes = 0;
  std::vector<std::string> layer_names;
  IterationTimeline timeline;
  // The training strategy and what it changed; for `dp` its numbers are the fields above.
  StrategyOutcome strategy;
};

// The four parts an iteration splits into, in the order of IterationShares.
enum class Resource { Compute, Memory, Communication, Host };
const char* resource_name(Resource r);  // compute, memory, communication, host
// The hardware what-if that makes `r` twice as good: FLOP/s x2; memory bandwidth x2; both links'
// bandwidth x2 and latencies x0.5; host launch costs x0.5.
WhatIf improved(Resource r);
// A resource is improved 2x only where its improvement shortens the iteration by at least this
// share of it; below that, it is not what limits the iteration.
constexpr double kBottleneckGain = 1e-3;
// The bottleneck: of the parts (compute-bound, memory-bound, exposed communication, host-bound idle
// time) the largest whose resource, improved 2x, shortens the iteration by at least
// kBottleneckGain of it; `gain_s(r)` says by how much (asked lazily, largest part first). Where none
// does, the one whose improvement gains most. The one rule of predict() and the verdicts.
std::string bottleneck_rule(const double parts[4], double iteration_s, const std::function<double(Resource)>& gain_s);

// Checks the configuration (InputError naming the flag) and predicts it.
Prediction predict(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg);
// The same, with what predictions on clusters derived from one (apply_what_if) share: their kernel
// times and steps before the collectives (sim/pricing.hpp). The numbers are predict()'s own.
Prediction predict(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg, StepPricing& pricing);

// How the configuration's strategy holds the model on each GPU (Strategy::memory_layout), with its
// activation checkpointing: what memory_fit (sim/memory.hpp) takes.
MemoryLayout training_memory_layout(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg);

// One GPU's step at `batch` samples, without communication (a strategy's local step, a grid column).
IterationTimeline single_gpu_step(const Graph& g, const ClusterSpec& c, const TrainingConfig& cfg, int64_t batch);

// Largest batch per GPU accepted; beyond it the question is not a training configuration.
constexpr int64_t kMaxBatchPerGpu = 1 << 20;
// Largest number of micro-batches per optimizer step accepted.
constexpr int kMaxGradAccumSteps = 1 << 16;

}  // namespace dtsim
