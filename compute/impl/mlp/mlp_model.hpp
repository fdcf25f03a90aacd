#pragma once
// The measured compute model: a kernel's time is its predictor's time on the measured GPU, times
// the ratio of the target's and the measured GPU's roofline times for that kernel (plus the
// difference of their fixed per-kernel costs) — the identity on the measured GPU itself, the what-if
// scaling on any other. Kernels no measured GPU has a predictor for take the target's roofline time, and
// so do convolutions, matmuls and attention that run on tensor cores on only one of the two GPUs.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "compute/impl/mlp/mlp.hpp"
#include "compute/compute_model.hpp"

namespace dtsim::mlp {

bool have_predictors();

class MlpComputeModel;

// Drops every predictor output MlpComputeModel remembers (benchmarks of a first prediction; tests).
void forget_predictions();

// The base times a predictor set's ratio predictors multiply (Mlp::ratio_of): for each kernel whose
// predictor in `set` is a ratio predictor, its contiguous twin's time by `base` (a measured compute
// model of the set's own GPU, made when first asked for), where a measured predictor times the twin; NaN for every other kernel.
// `base` is asked only when some kernel needs it. With `in_range`, whether each base lay inside its
// predictor's training range.
std::vector<double> ratio_bases(const PredictorSet& set, const std::vector<KernelDesc>& ks,
                                const std::function<const MlpComputeModel&()>& base, std::vector<bool>* in_range = nullptr);

// Seconds a predictor set gives each kernel on its own GPU (NaN where it has no predictor), ratio
// predictors composed with their base (the shipped predictors of that GPU, through MlpComputeModel):
// what the trainer and the tests score.
std::vector<double> predict_on_own_gpu(const PredictorSet& set, const std::vector<KernelDesc>& ks);

class MlpComputeModel : public ComputeModel {
 public:
  // Each kernel takes the predictor of `target` if one is shipped for its key, else that of the
  // closest measured GPU that has one (e.g. h200-sxm's convolutions from h100-sxm's predictors).
  explicit MlpComputeModel(GpuSpec target);
  std::string name() const override { return "mlp"; }
  std::string note() const override;
  KernelTime time(const KernelDesc& k) const override;
  // Each kernel no faster than its half-batch twin, recursively (batch_monotone_times): raw_times
  // under the batch ladder.
  void times(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& out) const override;
  // The times before the batch ladder: each kernel's predictor, carried to the target and floored by
  // physics. The ratio predictors' bases are these, as the trainer scored them (ratio_bases). Returns
  // how many of the first `counted` kernels were raised to the physics floor.
  size_t raw_times(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& out, size_t counted = SIZE_MAX) const;

  // The closest measured GPU (the target itself when it has predictors).
  const GpuSpec& measured_gpu() const { return sources_.front()->gpu; }
  // Whether a measured predictor (rather than the roofline) times this kernel.
  bool covers(const KernelDesc& k) const;
  // Distinct kernels of times()'s lists whose predicted time fell below physics_floor_s and was
  // raised to it (tests and diagnosis: the predictors themselves should not go there).
  size_t floored() const { return floored_; }

 private:
  // A measured GPU's predictors, read when a kernel first asks this model for them: a prediction
  // that the closest GPU's predictors cover never reads the others'.
  struct Source {
    GpuSpec gpu;
    std::string dir;
    mutable std::shared_ptr<const PredictorSet> loaded;
    mutable std::mutex mu;
    Source(GpuSpec g, std::string d) : gpu(std::move(g)), dir(std::move(d)) {}
    const PredictorSet& set() const;
  };
  // Whether a source's measured time of k may be scaled to the target (same kind of math unit).
  bool carries(const Source& s, const KernelDesc& k) const;
  // src.set->predict(ks), each kernel inferred once for the process (forget_predictions).
  void remembered_predict(const Source& src, const std::vector<KernelDesc>& ks, std::vector<double>& seconds, std::vector<bool>& in_range) const;
  // The model that times a source's ratio predictors' bases on the source's own GPU: this one where the
  // source is the target, else one made for the source's GPU when first needed.
  const MlpComputeModel& base_model(const Source& s) const;
  GpuSpec target_;
  std::vector<std::unique_ptr<Source>> sources_;  // closest first
  mutable std::atomic<size_t> floored_{0};
  mutable std::mutex base_models_mu_;
  mutable std::map<std::string, std::unique_ptr<MlpComputeModel>> base_models_;
};

}  // namespace dtsim::mlp
