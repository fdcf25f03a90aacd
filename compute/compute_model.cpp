#include "compute/compute_model.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <utility>

#include "core/error.hpp"
#include "compute/impl/mlp/mlp_model.hpp"
#include "compute/impl/roofline/roofline_model.hpp"

namespace dtsim {

namespace {
using Factory = std::function<std::unique_ptr<ComputeModel>(const GpuSpec&)>;
const std::vector<std::pair<std::string, Factory>>& registry() {
  static const std::vector<std::pair<std::string, Factory>> r = {
      {"auto", [](const GpuSpec& g) -> std::unique_ptr<ComputeModel> {
         if (mlp::have_predictors()) return std::make_unique<mlp::MlpComputeModel>(g);
         return std::make_unique<RooflineModel>(g);
       }},
      {"mlp", [](const GpuSpec& g) -> std::unique_ptr<ComputeModel> { return std::make_unique<mlp::MlpComputeModel>(g); }},
      {"roofline", [](const GpuSpec& g) -> std::unique_ptr<ComputeModel> { return std::make_unique<RooflineModel>(g); }},
  };
  return r;
}
}  // namespace

static bool same_kernel(const KernelDesc& a, const KernelDesc& b) {
  return a.kind == b.kind && a.pass == b.pass && a.math == b.math && a.layer == b.layer && a.shape == b.shape && a.flops == b.flops &&
         a.bytes == b.bytes && (a.variant == b.variant || std::strcmp(a.variant, b.variant) == 0);
}

void RememberingComputeModel::times(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = recent_.begin(); it != recent_.end(); ++it) {
    if (it->kernels.size() != ks.size() || !std::equal(ks.begin(), ks.end(), it->kernels.begin(), same_kernel)) continue;
    out = it->times;
    if (it != recent_.begin()) {
      Entry e = std::move(*it);
      recent_.erase(it);
      recent_.push_front(std::move(e));
    }
    return;
  }
  ++misses_;
  inner_->times(ks, out);
  recent_.push_front(Entry{ks, out});
  if (recent_.size() > capacity_) recent_.pop_back();
}

std::vector<std::string> compute_model_names() {
  std::vector<std::string> n;
  for (const auto& [name, f] : registry()) n.push_back(name);
  return n;
}

std::unique_ptr<ComputeModel> make_compute_model(const std::string& name, const GpuSpec& gpu) {
  for (const auto& [n, f] : registry())
    if (n == name) return f(gpu);
  std::string known;
  for (const auto& n : compute_model_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError("--compute-model", "unknown compute model '" + name + "' (" + known + ")");
}

}  // namespace dtsim
