#pragma once
// Compute models: predict one kernel's time on one GPU. Implementations live in compute/impl/
// (roofline/, mlp/) and are chosen by name.
#include <deque>
#include <functional>
#include <memory>
#include <optional>
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

// Kernels that price alike: every field but the layer index (for tables of kernel times).
struct SamePricedKernel {
  bool operator()(const KernelDesc& a, const KernelDesc& b) const;
};
struct PricedKernelHash {
  size_t operator()(const KernelDesc& k) const;
};

// A kernel's half-batch twin: the same kernel with its batch field (batch_shape_field) halved and
// its FLOPs and bytes recomputed (set_cost). None where the kernel has no batch field or it is odd
// (no exact half batch).
std::optional<KernelDesc> half_batch_twin(const KernelDesc& k);

// Kernel times that never fall as the batch grows. A bigger batch is more work of the same kind on
// the same GPU, and a GPU does not finish more work sooner: a kernel over 2N samples can always be
// run as its N-sample half plus more. The measured predictors do not know that: fitted to noisy
// times of discrete algorithms (cuDNN's and cuBLAS's choice changes with the shape), their outputs
// fall where the data's did or the fit wiggles, at tiny sizes most (alexnet's bf16 gemm bwd_weight on
// h100-sxm: 23.6 us at batch 1, 17.9 at 2); carried to another GPU, so do the carry's two branches
// (compute/impl/mlp/mlp_model.cpp). So a kernel takes the larger of its own time and its half-batch
// twin's, recursively down the ladder of halvings:
//     t(k) = max(raw(k), t(half_batch_twin(k)))      where `ladders(k)` and a twin exists,
//     t(k) = raw(k)                                   otherwise,
// which makes t(2N) >= t(N) for every N on every doubling ladder (1, 2, 4, ...; 3, 6, 12, ...), and
// leaves a kernel whose time already never falls down its ladder exactly as it was. `ladders` says
// which kernels take a ladder (a model monotone by construction, as the roofline is, needs none).
// Every distinct kernel (ks and the twins, the layer index ignored) is priced once, in one call of
// `raw` (a predictor infers them as one batch): the first `own` kernels of its list are ks's, the
// rest twins. The result keeps the kernel's own flags (source, bound, in_range); only the seconds
// can rise.
using RawTimes = std::function<void(const std::vector<KernelDesc>&, std::vector<KernelTime>&, size_t own)>;
void batch_monotone_times(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& out, const RawTimes& raw,
                          const std::function<bool(const KernelDesc&)>& ladders);

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
