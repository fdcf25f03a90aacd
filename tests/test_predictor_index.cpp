#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.hpp"
#include "compute/impl/mlp/mlp.hpp"
#include "study_cli.hpp"
#include "workload/graph.hpp"
#include "workload/kernels.hpp"
#include "workload/model_json.hpp"

using namespace dtsim;
using namespace dtsim::mlp;
namespace fs = std::filesystem;

namespace {

std::vector<KernelDesc> zoo_kernels() {
  std::vector<KernelDesc> all;
  for (const char* m : {"resnet50", "gpt2_small", "mobilenet_v2"})
    for (Precision p : {Precision::FP32, Precision::BF16}) {
      const auto ks = lower_iteration(load_model(m), 8, p);
      for (const auto* list : {&ks.forward, &ks.backward, &ks.update}) all.insert(all.end(), list->begin(), list->end());
    }
  return all;
}

// The same kernels priced by two sets: equal bit for bit, NaN where neither covers a kernel.
void require_same_predictions(const PredictorSet& a, const PredictorSet& b, const std::vector<KernelDesc>& ks) {
  std::vector<double> ta, tb;
  std::vector<bool> ia, ib;
  a.predict(ks, ta, &ia);
  b.predict(ks, tb, &ib);
  REQUIRE(ta.size() == tb.size());
  size_t covered = 0;
  for (size_t i = 0; i < ta.size(); ++i) {
    if (std::isnan(ta[i])) {
      REQUIRE(std::isnan(tb[i]));
      continue;
    }
    ++covered;
    REQUIRE(ta[i] == tb[i]);
    REQUIRE(ia[i] == ib[i]);
  }
  REQUIRE(covered > ks.size() / 2);  // the comparison is over real predictions, not NaNs
}

void copy_folder(const std::string& from, const std::string& to) {
  fs::create_directories(to);
  for (const char* f : {"manifest.json", "weights.bin"}) fs::copy_file(from + "/" + f, to + "/" + f, fs::copy_options::overwrite_existing);
}

}  // namespace

TEST_CASE("predictor index: a set read from its index predicts what the set read from its manifest does") {
  study_test::TempDir tmp("predictor_index");
  const std::vector<KernelDesc> ks = zoo_kernels();
  for (const auto& gpu : pretrained_gpus()) {
    const std::string dir = pretrained_root() + "/" + gpu, index = tmp.path + "/" + gpu + ".idx";
    write_predictor_index(dir, index);
    const PredictorSet from_json = load_predictors(dir, true);
    const PredictorSet from_index = load_predictors_indexed(dir, index);
    CHECK(from_index.manifest.is_null());  // read from the index, not the JSON
    CHECK(from_index.gpu == from_json.gpu);
    CHECK(from_index.sm_count == from_json.sm_count);
    CHECK(from_index.has_ratio_predictors == from_json.has_ratio_predictors);
    REQUIRE(from_index.by_key.size() == from_json.by_key.size());
    for (const auto& [key, m] : from_json.by_key) {
      const Mlp& n = from_index.by_key.at(key);
      CHECK(n.feature_names == m.feature_names);
      CHECK(n.heldout == m.heldout);
      CHECK(n.ratio_of == m.ratio_of);
      CHECK(n.max_roofline_fraction == m.max_roofline_fraction);
    }
    require_same_predictions(from_json, from_index, ks);
  }
}

TEST_CASE("predictor index: an index of another manifest, or a damaged one, is ignored and the JSON is read") {
  study_test::TempDir tmp("predictor_index_stale");
  const std::string shipped = pretrained_root() + "/h100-sxm", dir = tmp.path + "/h100-sxm", index = tmp.path + "/h100-sxm.idx";
  copy_folder(shipped, dir);
  write_predictor_index(dir, index);
  REQUIRE(load_predictors_indexed(dir, index).manifest.is_null());

  SECTION("the manifest changed after the index was made") {
    std::ofstream(dir + "/manifest.json", std::ios::app) << " ";  // the same JSON, other bytes
    const PredictorSet set = load_predictors_indexed(dir, index);
    CHECK_FALSE(set.manifest.is_null());
    require_same_predictions(set, load_predictors(shipped, true), zoo_kernels());
  }
  SECTION("the index is cut short") {
    std::string bytes;
    {
      std::ifstream in(index, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    std::ofstream(index, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
    CHECK_FALSE(load_predictors_indexed(dir, index).manifest.is_null());
  }
  SECTION("no index") {
    fs::remove(index);
    CHECK_FALSE(load_predictors_indexed(dir, index).manifest.is_null());
  }
}

TEST_CASE("predictor index: a damaged weights.bin is refused as from the manifest") {
  study_test::TempDir tmp("predictor_index_weights");
  const std::string dir = tmp.path + "/h100-sxm", index = tmp.path + "/h100-sxm.idx";
  copy_folder(pretrained_root() + "/h100-sxm", dir);
  write_predictor_index(dir, index);
  SECTION("a byte changed: the block's checksum fails when a kernel first needs it") {
    {
      std::fstream f(dir + "/weights.bin", std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(16);
      f.put('\x7f');
    }
    const PredictorSet set = load_predictors_indexed(dir, index);
    REQUIRE(set.manifest.is_null());
    bool refused = false;
    for (const auto& [key, m] : set.by_key) {
      try {
        set.find(key);
      } catch (const InputError& e) {
        refused = true;
        CHECK(std::string(e.what()).find("checksum") != std::string::npos);
      }
    }
    CHECK(refused);
  }
  SECTION("cut short: refused at once, naming the sizes") {
    fs::resize_file(dir + "/weights.bin", fs::file_size(dir + "/weights.bin") - 4);
    CHECK_THROWS_WITH(load_predictors_indexed(dir, index), Catch::Contains("weights.bin") && Catch::Contains("bytes, but"));
  }
}

TEST_CASE("predictor index: the build's index of each shipped GPU is current") {
  // The build writes them (dtsim_predictor_index, which dtsim and so this test binary depend on).
  for (const auto& gpu : pretrained_gpus()) {
    const std::string dir = pretrained_root() + "/" + gpu;
    const std::string index = predictor_index_path(dir);
    REQUIRE_FALSE(index.empty());
    REQUIRE(fs::exists(index));
    CHECK(load_predictors_indexed(dir, index).manifest.is_null());
  }
}
