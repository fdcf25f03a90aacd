#include "compute/impl/mlp/mlp_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "core/error.hpp"
#include "compute/impl/roofline/roofline_model.hpp"

namespace dtsim::mlp {

bool have_predictors() { return !pretrained_gpus().empty(); }

// Closeness of two GPUs on the roofline's axes: peak FLOP/s per math mode and memory bandwidth.
static double distance(const GpuSpec& a, const GpuSpec& b) {
  double d = std::pow(std::log(a.memory_bandwidth_Bps / b.memory_bandwidth_Bps), 2);
  for (int m = 0; m < kMathModes; ++m)  // a mode one of them lacks (V100's bf16) says nothing of closeness
    if (a.peak_flops[m] > 0 && b.peak_flops[m] > 0) d += std::pow(std::log(a.peak_flops[m] / b.peak_flops[m]), 2);
  return d;
}

// Whether convolutions and matmuls of a math mode run at a matrix-unit (tensor-core) rate on this GPU:
// the mode's peak well above the plain FP32 rate (H100 TF32 494.7 against 66.9 TF/s; V100 has no TF32 and runs
// "fp32" convolutions at its FP32 rate). A measured kernel's shortfall from the roofline carries to
// another GPU only where the kernel runs on the same kind of unit on both: scaled from H100's TF32
// tensor-core convolutions, resnet50's training step on one V100 came out 2.6 times slower than
// NVIDIA publishes (kernels_mlp/README.md, "Another GPU"), so such kernels take the target's roofline.
static bool matrix_rate(const GpuSpec& g, MathMode m) {
  return g.peak_flops[static_cast<int>(m)] > 1.5 * g.peak_flops[static_cast<int>(MathMode::FP32)];
}

// A kernel's time measured on one GPU, carried to another. The part its roofline explains scales with
// the ratio of the two roofline times. What a memory-bound kernel takes beyond its bytes' time
// (depthwise convolutions, small grids: latency and issue, not bandwidth) scales with the rate the
// SMs issue work, count x clock, which HBM does not change: the H200 has the H100's SMs and clock and
// 43% more bandwidth, and its measured convolutions run at 0.78-1.00 of the H100's time, near 1 for
// the kernels farthest below their memory roofline (kernels_mlp/README.md, "Another GPU"). A
// compute-bound kernel's shortfall is its math units' and scales with their peak, as before; so do
// all kernels where either preset lacks sm_clock_MHz.
static double carried_time_s(double measured_s, const KernelTime& source_roof, const KernelTime& target_roof,
                             const GpuSpec& source, const GpuSpec& target) {
  const double fixed_diff_s = target.kernel_overhead_s - source.kernel_overhead_s;
  const double roof_ratio = (target_roof.seconds - fixed_diff_s) / source_roof.seconds;
  const double beyond_bytes_s = measured_s - source_roof.seconds;
  if (!source_roof.memory_bound || beyond_bytes_s <= 0 || source.sm_clock_Hz <= 0 || target.sm_clock_Hz <= 0)
    return measured_s * roof_ratio + fixed_diff_s;
  const double issue_ratio = (source.sm_count * source.sm_clock_Hz) / (target.sm_count * target.sm_clock_Hz);
  return target_roof.seconds + beyond_bytes_s * issue_ratio;
}

bool MlpComputeModel::carries(const Source& s, const KernelDesc& k) const {
  // Attention's products run on the matrix units as the matmuls do (flash attention in bf16/fp16).
  if (k.kind != KernelKind::Conv2d && k.kind != KernelKind::Gemm && k.kind != KernelKind::Attention) return true;
  return matrix_rate(s.gpu, k.math) == matrix_rate(target_, k.math);
}

// The GPU whose closeness to the measured ones decides which measured GPU prices a kernel: the preset
// a GPU is named after, before any what-if scaling. A what-if of an A100 with more bandwidth is still
// an A100; ordering by the scaled specs switched it from the H100's predictors to the H200's midway up
// the bandwidth axis, and a switch between two GPUs' predictors can make the faster GPU slower.
static GpuSpec closeness_reference(const GpuSpec& target) {
  try {
    return load_gpu(target.name);
  } catch (const InputError&) {
    return target;  // a GPU of its own (a cluster file's inline GPU, a GPU file not among the presets)
  }
}

MlpComputeModel::MlpComputeModel(GpuSpec target) : target_(std::move(target)) {
  auto gpus = pretrained_gpus();
  if (gpus.empty()) throw InputError("--compute-model", "no measured predictors under " + pretrained_root());
  const GpuSpec reference = closeness_reference(target_);
  std::vector<std::pair<double, std::string>> by_distance;
  for (const auto& g : gpus) by_distance.push_back({g == target_.name ? -1.0 : distance(load_gpu(g), reference), g});
  std::sort(by_distance.begin(), by_distance.end());
  for (const auto& [d, g] : by_distance) sources_.push_back(std::make_unique<Source>(load_gpu(g), pretrained_root() + "/" + g));
}

const PredictorSet& MlpComputeModel::Source::set() const {
  std::lock_guard<std::mutex> lock(mu);
  if (!loaded) loaded = cached_predictors(dir);
  return *loaded;
}

static KernelDesc contiguous_twin(KernelDesc k) {
  k.format = MemoryFormat::Contiguous;
  return k;
}

std::vector<double> ratio_bases(const PredictorSet& set, const std::vector<KernelDesc>& ks,
                                const std::function<const MlpComputeModel&()>& base, std::vector<bool>* in_range) {
  std::vector<double> out(ks.size(), std::numeric_limits<double>::quiet_NaN());
  if (in_range) in_range->assign(ks.size(), true);
  if (!set.has_ratio_predictors) return out;
  std::vector<KernelDesc> twins;
  std::vector<size_t> at;
  for (size_t i = 0; i < ks.size(); ++i) {
    const Mlp* m = set.find(predictor_key(ks[i]));
    if (m == nullptr || m->ratio_of.empty()) continue;
    KernelDesc twin = contiguous_twin(ks[i]);
    if (predictor_key(twin) != m->ratio_of) continue;  // not the base this ratio was learnt against
    twins.push_back(twin);
    at.push_back(i);
  }
  if (twins.empty()) return out;
  std::vector<KernelTime> t;
  base().raw_times(twins, t);
  for (size_t j = 0; j < twins.size(); ++j) {
    if (t[j].source != TimeSource::Mlp) continue;  // the twin takes the roofline: no measured base
    out[at[j]] = t[j].seconds;
    if (in_range) (*in_range)[at[j]] = t[j].in_range;
  }
  return out;
}

std::vector<double> predict_on_own_gpu(const PredictorSet& set, const std::vector<KernelDesc>& ks) {
  std::vector<double> seconds;
  if (!set.has_ratio_predictors) {
    set.predict(ks, seconds);
    return seconds;
  }
  std::unique_ptr<MlpComputeModel> base;
  const std::vector<double> bases = ratio_bases(set, ks, [&]() -> const MlpComputeModel& {
    if (!base) base = std::make_unique<MlpComputeModel>(load_gpu(set.gpu));
    return *base;
  });
  set.predict(ks, seconds, nullptr, &bases);
  return seconds;
}

const MlpComputeModel& MlpComputeModel::base_model(const Source& s) const {
  if (s.gpu.name == target_.name && distance(s.gpu, target_) == 0 && s.gpu.kernel_overhead_s == target_.kernel_overhead_s) return *this;
  std::lock_guard<std::mutex> lock(base_models_mu_);
  auto& slot = base_models_[s.gpu.name];
  if (!slot) slot = std::make_unique<MlpComputeModel>(s.gpu);
  return *slot;
}

bool MlpComputeModel::covers(const KernelDesc& k) const {
  const std::string key = predictor_key(k);
  for (const auto& sp : sources_) {
    const Source& s = *sp;
    const Mlp* m = s.set().find(key);
    if (m == nullptr || !carries(s, k)) continue;
    // A ratio predictor covers a kernel whose contiguous twin a measured predictor times.
    if (m->ratio_of.empty() || base_model(s).covers(contiguous_twin(k))) return true;
  }
  return false;
}

std::string MlpComputeModel::note() const {
  const GpuSpec& first = sources_.front()->gpu;
  std::string n = first.name == target_.name && distance(first, target_) == 0
                      ? "mlp predictors measured on " + first.name
                      : "mlp predictors measured on " + first.name + ", scaled to " + target_.name + " by the ratio of their roofline times";
  if (sources_.size() > 1) n += " (kernels without one there: the next closest measured GPU's, scaled alike)";
  for (MathMode m : {MathMode::TF32, MathMode::BF16, MathMode::FP16}) {
    if (matrix_rate(first, m) != matrix_rate(target_, m)) {
      n += "; convolutions and matmuls that run on tensor cores on only one of " + first.name + " and " + target_.name +
           " take the roofline";
      break;
    }
  }
  return n;
}

void MlpComputeModel::times(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& out) const {
  // The roofline is monotone in the batch by construction: only kernels a measured predictor may
  // time take the ladder.
  batch_monotone_times(
      ks, out, [this](const std::vector<KernelDesc>& list, std::vector<KernelTime>& t, size_t own) { floored_ += raw_times(list, t, own); },
      [this](const KernelDesc& k) {
        const std::string key = predictor_key(k);
        for (const auto& s : sources_)
          if (s->set().find(key)) return true;
        return false;
      });
}

namespace {

// What each shipped predictor set predicted for each kernel on its own GPU, for the life of the
// process. A prediction depends on the predictor and the kernel only (the carry to the target comes
// after; a ratio predictor's base is the set's own GPU's time of the kernel's contiguous twin), so
// every model that draws on the set shares it: the what-if GPUs a prediction names its bottleneck
// with (2x FLOP/s, 2x memory bandwidth) reuse the prediction's own inferences, and a sweep's batch
// sizes the rungs of each other's batch ladders. Sets come from cached_predictors, which keeps them
// for the process, so their addresses name them. Bounded: a table that outgrows kMaxRemembered kernels
// starts again. A ratio predictor's output is not remembered: its base is timed by the model that asks
// (base_model: the target itself where it has predictors, so a what-if GPU's physics floor enters it).
struct Remembered {
  double seconds;
  bool in_range;
};
constexpr size_t kMaxRemembered = size_t{1} << 18;
std::mutex remembered_mu;
std::map<const PredictorSet*, std::unordered_map<KernelDesc, Remembered, PricedKernelHash, SamePricedKernel>> remembered;

}  // namespace

void forget_predictions() {
  std::lock_guard<std::mutex> lock(remembered_mu);
  remembered.clear();
}

void MlpComputeModel::remembered_predict(const Source& src, const std::vector<KernelDesc>& ks, std::vector<double>& seconds,
                                         std::vector<bool>& in_range) const {
  seconds.assign(ks.size(), std::numeric_limits<double>::quiet_NaN());
  in_range.assign(ks.size(), true);
  std::vector<size_t> unknown;
  {
    std::lock_guard<std::mutex> lock(remembered_mu);
    const auto& table = remembered[&src.set()];
    for (size_t j = 0; j < ks.size(); ++j) {
      const auto it = table.find(ks[j]);
      if (it == table.end()) {
        unknown.push_back(j);
        continue;
      }
      seconds[j] = it->second.seconds;
      in_range[j] = it->second.in_range;
    }
  }
  if (unknown.empty()) return;
  std::vector<KernelDesc> batch;
  for (size_t j : unknown) batch.push_back(ks[j]);
  // Ratio predictors multiply their base, the contiguous twin's time on the source's own GPU.
  std::vector<bool> base_in_range, inside;
  std::vector<double> bases, predicted;
  if (src.set().has_ratio_predictors)
    bases = ratio_bases(src.set(), batch, [&]() -> const MlpComputeModel& { return base_model(src); }, &base_in_range);
  src.set().predict(batch, predicted, &inside, bases.empty() ? nullptr : &bases);
  for (size_t j = 0; j < base_in_range.size(); ++j) inside[j] = inside[j] && base_in_range[j];
  std::lock_guard<std::mutex> lock(remembered_mu);
  auto& table = remembered[&src.set()];
  if (table.size() + batch.size() > kMaxRemembered) table.clear();
  for (size_t u = 0; u < unknown.size(); ++u) {
    seconds[unknown[u]] = predicted[u];
    in_range[unknown[u]] = inside[u];
    const bool used_base = !bases.empty() && !std::isnan(bases[u]);
    if (!used_base) table.emplace(batch[u], Remembered{predicted[u], inside[u]});
  }
}

size_t MlpComputeModel::raw_times(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& out, size_t counted) const {
  out.resize(ks.size());
  RooflineModel target_roof(target_);
  for (size_t i = 0; i < ks.size(); ++i) out[i] = target_roof.time(ks[i]);
  // Kernels still without a measured time, by index; each source predicts the ones it covers.
  std::vector<size_t> open(ks.size());
  for (size_t i = 0; i < ks.size(); ++i) open[i] = i;
  std::vector<KernelDesc> batch;
  std::vector<double> measured;
  std::vector<bool> in_range;
  size_t floored = 0;
  // Measured ground first: a kernel outside the closest GPU's training range takes another measured
  // GPU's predictor where it lies inside that one's range (scaled by the roofline ratio), before any
  // predictor extrapolates (h200-sxm's large FP32 GEMMs from h100-sxm's, measured up to 1.1 TFLOP a
  // call, rather than from its own, measured up to 0.26).
  const size_t rounds = sources_.size() > 1 ? 2 : 1;  // in range only, then anywhere
  for (size_t step = 0; step < rounds * sources_.size() && !open.empty(); ++step) {
    const Source& src = *sources_[step % sources_.size()];
    const bool in_range_only = rounds == 2 && step < sources_.size();
    batch.clear();
    for (size_t i : open) batch.push_back(ks[i]);
    remembered_predict(src, batch, measured, in_range);
    RooflineModel measured_roof(src.gpu);
    std::vector<size_t> still;
    for (size_t j = 0; j < open.size(); ++j) {
      if (std::isnan(measured[j]) || !carries(src, batch[j]) || (in_range_only && !in_range[j])) {
        still.push_back(open[j]);
        continue;
      }
      KernelTime& t = out[open[j]];
      t.seconds = carried_time_s(measured[j], measured_roof.time(batch[j]), t, src.gpu, target_);
      t.source = TimeSource::Mlp;
      t.in_range = in_range[j];
      // Physics is a floor on every GPU. The predictors' features are clamped to their training range,
      // so they do not run away beyond it; this catches what is left (a what-if scaling across GPUs
      // whose binding resource differs, a predictor's error at the edge of the data), and is counted.
      const double floor_s = physics_floor_s(batch[j], target_);
      if (t.seconds < floor_s) {
        t.seconds = floor_s;
        floored += open[j] < counted;
      }
    }
    open.swap(still);
  }
  return floored;
}

KernelTime MlpComputeModel::time(const KernelDesc& k) const {
  std::vector<KernelTime> out;
  times({k}, out);
  return out[0];
}

DTSIM_REGISTER(ComputeModelRegistry, {"mlp", 1, "measured predictors (kernels_mlp/pretrained/), scaled by the roofline ratio to GPUs never measured",
                                       [](const GpuSpec& g) -> std::unique_ptr<ComputeModel> { return std::make_unique<MlpComputeModel>(g); }})
// "auto" lives here because it chooses between this model and the roofline.
DTSIM_REGISTER(ComputeModelRegistry, {"auto", 0, "mlp where measured predictors exist, the roofline otherwise",
                                       [](const GpuSpec& g) -> std::unique_ptr<ComputeModel> {
                                         if (have_predictors()) return std::make_unique<MlpComputeModel>(g);
                                         return std::make_unique<RooflineModel>(g);
                                       }})

}  // namespace dtsim::mlp
