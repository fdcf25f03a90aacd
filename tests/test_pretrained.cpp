// The shipped predictors, re-checked against the committed measurements they were trained on: the
// held-out part (the same hash split the trainer used) must meet its held-out target (below), and the error
// must equal what the manifest reports. A predictor the manifest marks as shipped below its target
// must at least beat the roofline on those shapes (and is reported as a warning).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

#include "compute/impl/mlp/dataset.hpp"
#include "compute/impl/mlp/mlp.hpp"
#include "compute/impl/mlp/mlp_model.hpp"
#include "hardware/gpu_spec.hpp"
#include "compute/impl/roofline/roofline_model.hpp"

using namespace dtsim;
using namespace dtsim::mlp;
namespace fs = std::filesystem;

// Mean absolute percentage error targets on held-out shapes (kernels_mlp/README.md); attention is held to the
// matmuls' target, as the trainer holds it.
static double target_mape(const std::string& key) {
  return (key.rfind("conv2d/", 0) == 0 || key.rfind("gemm/", 0) == 0 || key.rfind("attention/", 0) == 0) ? 0.10 : 0.15;
}

TEST_CASE("shipped predictors meet their held-out targets on the committed data") {
  auto gpus = pretrained_gpus();
  if (gpus.empty()) WARN("no shipped predictors under " << pretrained_root());
  for (const auto& gpu : gpus) {
    PredictorSet set = load_predictors(pretrained_root() + "/" + gpu);
    std::string data_dir = std::string(DTSIM_SOURCE_DIR) + "/" + set.manifest.at("data_dir").get<std::string>();
    // The data must be the data the predictors were trained on.
    for (const auto& f : set.manifest.at("data")) {
      INFO(f.dump());
      CHECK(file_fnv1a64(data_dir + "/" + f.at("file").get<std::string>()) == f.at("fnv1a64").get<std::string>());
    }
    std::map<std::string, std::vector<Sample>> by_file;
    for (const auto& f : set.manifest.at("data")) {
      const std::string file = f.at("file").get<std::string>();
      by_file[file] = read_kernel_csv(data_dir + "/" + file);
    }
    for (const auto& [key, mlp] : set.by_key) {
      INFO(gpu << " " << key);
      // The files its own run read where the manifest names them, else every file of the folder.
      std::vector<std::string> files;
      for (const auto& p : set.manifest.at("predictors"))
        if (p.at("key") == key && p.contains("trained_with") && p.at("trained_with").is_object() && p.at("trained_with").contains("files"))
          files = p.at("trained_with").at("files").get<std::vector<std::string>>();
      if (files.empty())
        for (const auto& [file, rows] : by_file) files.push_back(file);
      std::vector<KernelDesc> held;
      std::vector<double> measured;
      for (const auto& file : files) {
        REQUIRE(by_file.count(file));
        for (const auto& s : by_file.at(file))
          if (s.key == key && is_heldout(s.kernel) && !s.beyond) held.push_back(s.kernel), measured.push_back(s.time_s);
      }
      REQUIRE(held.size() >= 5);
      // Ratio predictors multiply their base, the shipped contiguous predictors' time of the same shape.
      const std::vector<double> predicted = predict_on_own_gpu(set, held);
      double mape = 0;
      for (size_t i = 0; i < held.size(); ++i) mape += std::fabs(predicted[i] - measured[i]) / measured[i] / held.size();
      CHECK(mape == Approx(mlp.heldout.at("mape").get<double>()).epsilon(1e-3));
      if (mlp.heldout.value("meets_target", true)) {
        CHECK(mape <= target_mape(key));
      } else {
        // Shipped below its target (trainer --keep-below-target, listed in kernels_mlp/README.md):
        // only because it beats the roofline, which would time these kernels otherwise.
        RooflineModel roof(load_gpu(gpu));
        double roof_mape = 0;
        for (size_t i = 0; i < held.size(); ++i) roof_mape += std::fabs(roof.time(held[i]).seconds - measured[i]) / measured[i] / held.size();
        WARN(gpu << " " << key << ": held-out MAPE " << 100 * mape << "% misses its " << 100 * target_mape(key)
                 << "% target (roofline " << 100 * roof_mape << "%)");
        CHECK(mape > target_mape(key));  // the flag must not hide a predictor that meets its target
        CHECK(roof_mape == Approx(mlp.heldout.at("roofline_mape").get<double>()).epsilon(1e-3));
        CHECK(mape < roof_mape);
      }
    }
  }
}

TEST_CASE("what-if: H100 predictors carried to H200 meet the cross-GPU target on every covered H200 row") {
  // The cross-GPU target: at most 15% MAPE (aim 10%). Only the H100 predictors are visible, so h200-sxm is
  // predicted from them (roofline ratio + the fixed per-kernel cost difference).
  const fs::path root = fs::temp_directory_path() / ("dtsim_h100_only_" + std::to_string(::getpid()));
  fs::create_directories(root);
  fs::copy(pretrained_root() + "/h100-sxm", root / "h100-sxm", fs::copy_options::recursive);
  ::setenv("DTSIM_PREDICTOR_DIR", root.c_str(), 1);
  {
    MlpComputeModel model(load_gpu("h200-sxm"));
    CHECK(model.note().find("measured on h100-sxm") != std::string::npos);
    const std::string data = std::string(DTSIM_SOURCE_DIR) + "/validation/data/h200-sxm/kernels/";
    double sum = 0;
    size_t rows = 0;
    for (const char* f : {"activation.csv", "add.csv", "batchnorm.csv", "gemm.csv", "pool.csv", "sgd_update.csv", "softmax_ce.csv"}) {
      std::vector<KernelDesc> ks;
      std::vector<double> measured;
      for (const auto& s : read_kernel_csv(data + f))
        if (model.covers(s.kernel)) ks.push_back(s.kernel), measured.push_back(s.time_s);
      std::vector<KernelTime> t;
      model.times(ks, t);
      for (size_t i = 0; i < ks.size(); ++i) sum += std::fabs(t[i].seconds - measured[i]) / measured[i];
      rows += ks.size();
    }
    const double mape = sum / rows;
    INFO("H200 rows " << rows << ", MAPE " << 100 * mape << "%");
    CHECK(rows > 10000);
    CHECK(mape <= 0.15);
  }
  ::unsetenv("DTSIM_PREDICTOR_DIR");
  fs::remove_all(root);
}
