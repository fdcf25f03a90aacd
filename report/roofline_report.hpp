#pragma once
// A model's kernels on its GPU's roofline: per kernel, arithmetic intensity (FLOPs per byte moved,
// the lower-bound bytes of workload/kernels.hpp) and the FLOP/s it attains under the compute model;
// the roofs are the datasheet peaks per math mode and the memory bandwidth, and the attainable roofs
// those times the GPU's efficiency factors.
#include <array>
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "core/output.hpp"
#include "workload/graph.hpp"
#include "workload/kernels.hpp"
#include "network/cluster.hpp"

namespace dtsim {

struct RooflinePoint {
  std::string layer;
  KernelKind kind;
  Pass pass;
  MathMode math;
  double flops = 0, bytes = 0;
  double intensity = 0;       // FLOP per byte
  double time_s = 0;
  double attained_flops = 0;  // FLOP/s
  bool memory_bound = false;
  bool measured = false;  // priced by a measured predictor (else the roofline)
  bool in_range = true;   // inside that predictor's training range
};

struct RooflineReport {
  std::string model, gpu, precision, compute_model;
  StepMode mode;  // what was lowered: memory format, optimizer, execution
  std::string gpu_basis, gpu_basis_note;  // what the GPU preset's numbers rest on (hardware/gpu_spec.hpp)
  int64_t batch_per_gpu = 0;
  std::array<double, kMathModes> peak_flops{};  // 0: the GPU has no such math
  double memory_bandwidth_Bps = 0;
  double compute_efficiency = 1, memory_efficiency = 1;
  // The attainable fraction of each math unit's peak (GpuSpec::compute_efficiency_for).
  std::array<double, kMathModes> compute_efficiency_by_math{};
  std::vector<RooflinePoint> points;  // forward, backward, update, in execution order
  double total_s = 0;
};

RooflineReport roofline_report(const Graph& g, const ClusterSpec& c, int64_t batch, Precision p, const std::string& compute_model = "roofline",
                               const StepMode& mode = {});
// Ridge point of a math mode: the intensity above which the datasheet roofline turns compute-bound.
double ridge_intensity(const RooflineReport& r, MathMode m);

Json roofline_json(const RooflineReport& r);
// Per kernel kind and pass: count, time share, FLOP/s; then the 20 longest kernels.
std::string roofline_text(const RooflineReport& r);
Table roofline_csv(const RooflineReport& r);

}  // namespace dtsim
