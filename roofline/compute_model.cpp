#include "roofline/compute_model.hpp"

#include <functional>
#include <utility>

#include "common/error.hpp"
#include "kernels_mlp/mlp_model.hpp"
#include "roofline/impl/roofline_model.hpp"

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
