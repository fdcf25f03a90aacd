#pragma once
// Prediction against measurement (`dtsim validate`): each measured run (validation/README.md,
// schema "dtsim-measured-run/1") is predicted in its own configuration (model, GPUs, batch per GPU,
// precision, overlap, DDP bucket sizes, the GPU it ran on, the framework profile of the program that
// ran it) and compared: iteration time, signed error, per-layer errors where the run has them, and
// summary statistics of the absolute errors.
#include <cstdint>
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "network/cluster.hpp"
#include "sim/run_spec.hpp"

namespace dtsim {

struct MeasuredLayer {
  std::string name;
  double fwd_s = 0, bwd_s = 0;  // summed over the layer's kernels of each direction
};

struct MeasuredRun {
  std::string file, source, framework, model, gpu_name, cluster;
  std::string precision;
  int64_t gpus = 1, batch_per_gpu = 1;
  // Tokens per sample of a language model run ("sequence_length"), predicted as --seq-len is; 0: the
  // run has none (the model's own context).
  int64_t sequence_length = 0;
  bool overlap = true;
  int64_t first_bucket_bytes = 0, bucket_bytes = 0;
  double iteration_s = 0, p10_s = 0, p90_s = 0;
  std::vector<MeasuredLayer> layers;
  std::string versions;  // one line: driver, CUDA/cuDNN/NCCL, torch, as the provenance has them
  std::string date_utc;
  // memory.peak_allocated_bytes (torch.cuda.max_memory_allocated over the measured iterations, after
  // warm-up); 0 when the run has none (warm-up-only peaks are not compared: cudnn.benchmark's trial
  // workspaces inflate them).
  double peak_allocated_bytes = 0;
  double input_batches = -1;  // batches the program kept on the GPU ("dataset": "...: N batches ..."); -1: unknown
  // How the workers shared what they learned ("strategy" of the harness's train mode; absent: dp).
  // hierarchical / hierarchical-leader: group_size consecutive ranks play a node (predicted on the
  // run's cluster cut into nodes of group_size GPUs, split_node_cluster); local-sgd: parameters
  // averaged every average_every steps, iteration_s is the mean step over one period
  // (strategy.step_time_s.period_mean_s).
  std::string scheme = "dp";
  int64_t group_size = 0, average_every = 0;
  StepModeNames mode;  // "execution": memory format, optimizer, execution (checked names)
};

// The run's cluster with its nodes cut into nodes of `group_size` GPUs whose "network" is the same
// NVLink/NVSwitch fabric as inside them (one NIC per GPU at the intra-node bandwidth and latency, no
// oversubscription): how a hierarchical run on one node of G x k GPUs is predicted with dtsim's
// hierarchical strategies. configs/clusters/h100-sxm-2x2.json is h100-sxm cut this way (G = 2).
// A group_size equal to the cluster's GPUs per node leaves the cluster as it is: the groups are its nodes.
ClusterSpec split_node_cluster(const ClusterSpec& c, int64_t group_size);

// Strict reading of the fields validation needs (InputError naming the file, the JSON path and the rule).
MeasuredRun parse_measured_run(const Json& doc, const std::string& what);
// A file, or every *.json of a folder (sorted); paths may repeat (each one given once).
std::vector<std::string> measured_run_files(const std::vector<std::string>& paths);

struct LayerError {
  std::string name;
  double measured_fwd_s = 0, predicted_fwd_s = 0, measured_bwd_s = 0, predicted_bwd_s = 0;
  double error = 0;  // (predicted - measured) / measured of fwd + bwd
};

struct ValidationRow {
  MeasuredRun run;
  std::string framework_profile, compute_model;
  double predicted_s = 0;
  double error = 0;  // signed: (predicted - measured) / measured
  double predicted_host_idle_s = 0, predicted_exposed_comm_s = 0;
  std::string bottleneck;
  std::string strategy = "dp";  // the dtsim strategy that predicted it
  std::vector<LayerError> layers;
  double layer_median_abs_error = 0;  // over the layers with a measurement; 0 when none
  // Peak memory: dtsim's allocated_peak_bytes (with the run's input batches) against the measured
  // steady-state peak; has_memory is false when the run has no such measurement.
  bool has_memory = false;
  double predicted_peak_bytes = 0, memory_error = 0;
  std::string predicted_peak_phase;
};

struct ErrorSummary {
  std::string group;  // "all", or a framework name
  int runs = 0;
  double mean_abs = 0, median_abs = 0, max_abs = 0;
  std::string worst;  // the run with the largest absolute error
};

struct ValidationOptions {
  std::string framework;  // profile name or file; empty: each run's own framework
  std::string compute_model = "auto";
  std::string algo = "auto";
  // A cluster preset or file to predict every run on, instead of the preset of each run's GPU: the
  // calibrated cluster a run's network was measured on (an emulated socket cluster, a real one).
  // Its GPU must be the run's.
  std::string cluster;
};

ValidationRow validate_run(const MeasuredRun& run, const ValidationOptions& opt);
std::vector<ValidationRow> validate_runs(const std::vector<MeasuredRun>& runs, const ValidationOptions& opt);
// Overall first, then one per framework present.
std::vector<ErrorSummary> summarize(const std::vector<ValidationRow>& rows);

std::string validation_table(const std::vector<ValidationRow>& rows, bool layers);
std::string validation_csv(const std::vector<ValidationRow>& rows);
Json validation_json(const std::vector<ValidationRow>& rows);

// The run's short name: its file name without folder and extension.
std::string run_label(const MeasuredRun& r);

}  // namespace dtsim
