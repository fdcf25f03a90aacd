#pragma once
// Compute models: predict one kernel's time on one GPU. Implementations live in compute/impl/
// (roofline/, mlp/) and are chosen by name.
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "workload/kernels.hpp"
#include "hardware/gpu_spec.hpp"

namespace dtsim {

// What priced a kernel: the analytical roofline, or a predictor trained on measured kernels.
enum class TimeSource { Roofline, Mlp };

struct KernelTime {
  double seconds = 0;
  bool memory_bound = false;  // limited by bytes rather than FLOPs
  TimeSource source = TimeSource::Roofline;
  // A measured predictor's kernel inside the range of the shapes it was trained on; false where it
  // extrapolates (features clamped to the training range). Roofline times are analytical: true.
  bool in_range = true;
};

class ComputeModel {
 public:
  virtual ~ComputeModel() = default;
  virtual std::string name() const = 0;
  // One line for the output: what the times come from ("roofline: no measured predictors for ...").
  virtual std::string note() const { return name(); }
  virtual KernelTime time(const KernelDesc& k) const = 0;
  // Many kernels at once; models that batch their inference override it.
  virtual void times(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& out) const {
    out.resize(ks.size());
    for (size_t i = 0; i < ks.size(); ++i) out[i] = time(ks[i]);
  }
};

// Remembers the times of the last few kernel lists it was asked for, so that predictions that share
// their kernels (a sweep's GPU counts at one model and batch size, a prediction and its 1-GPU
// baseline) price them once. Lists are compared field by field: a hit is the same kernels.
class RememberingComputeModel : public ComputeModel {
 public:
  explicit RememberingComputeModel(std::unique_ptr<ComputeModel> inner, size_t lists = 8) : inner_(std::move(inner)), capacity_(lists) {}
  std::string name() const override { return inner_->name(); }
  std::string note() const override { return inner_->note(); }
  KernelTime time(const KernelDesc& k) const override { return inner_->time(k); }
  void times(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& out) const override;
  size_t misses() const { return misses_; }  // lists priced by the inner model (for tests)

 private:
  struct Entry {
    std::vector<KernelDesc> kernels;
    std::vector<KernelTime> times;
  };
  std::unique_ptr<ComputeModel> inner_;
  size_t capacity_;
  mutable std::mutex mu_;
  mutable std::deque<Entry> recent_;  // most recent first
  mutable size_t misses_ = 0;
};

// Compute models by name; each registers itself in its impl/ file (DTSIM_REGISTER): "roofline",
// "mlp" (measured predictors, scaled by the roofline ratio to GPUs never measured) and "auto" (mlp
// where predictors exist, the roofline otherwise).
using ComputeModelRegistry = Registry<ComputeModel, const GpuSpec&>;
// InputError("--compute-model") for a name nobody registered.
std::unique_ptr<ComputeModel> make_compute_model(const std::string& name, const GpuSpec& gpu);
std::vector<std::string> compute_model_names();

// The roofline's two floors, exposed for tests and the what-if ratio of later predictors.
double roofline_compute_s(const KernelDesc& k, const GpuSpec& gpu);
double roofline_memory_s(const KernelDesc& k, const GpuSpec& gpu);

// Physics: no kernel runs faster than its FLOPs at the datasheet peak of the math unit it runs on, or
// its minimum bytes at the datasheet memory bandwidth (no attainment factors). Every compute model's
// time is at least this.
double physics_floor_s(const KernelDesc& k, const GpuSpec& gpu);

}  // namespace dtsim
