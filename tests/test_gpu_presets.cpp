// GPU and cluster presets: every shipped file parses and says what its numbers rest on; a GPU
// without units for a math mode says so (null) and a prediction in that mode is an input error, not
// a division by zero; memory is given in GiB.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "core/error.hpp"
#include "compute/compute_model.hpp"
#include "workload/model_json.hpp"
#include "sim/predict.hpp"
#include "network/cluster.hpp"
#include "hardware/gpu_spec.hpp"
#include "study_cli.hpp"

using namespace dtsim;
namespace fs = std::filesystem;

namespace {

// A preset (h100-sxm unless named) as JSON, with one field changed by `edit`.
template <class F>
GpuSpec parse_edited(F edit, const std::string& preset = "h100-sxm") {
  Json j = load_json_file(config_dir() + "/gpus/" + preset + ".json");
  edit(j);
  return parse_gpu(JsonObject(j, "test.json", "$"));
}

}  // namespace

TEST_CASE("gpu presets: every shipped GPU parses, states its basis and cites its numbers") {
  int n = 0;
  for (const auto& e : fs::directory_iterator(config_dir() + "/gpus")) {
    if (e.path().extension() != ".json") continue;
    const std::string name = e.path().stem().string();
    INFO(name);
    const GpuSpec g = load_gpu(name);
    CHECK(g.name == name);
    CHECK(g.basis != "unstated");
    CHECK_FALSE(g.basis_note.empty());
    CHECK(g.supports(MathMode::FP32));
    for (int m = 0; m < kMathModes; ++m) CHECK(g.peak_flops[m] >= 0);
    CHECK(g.memory_bytes > 1e9);
    const Json doc = load_json_file(e.path().string());
    for (const char* k : {"peak_tflops", "memory", "sm_count"}) CHECK(doc.at("sources").contains(k));
    CHECK(doc.at("roofline").contains("note"));
    ++n;
  }
  CHECK(n >= 9);
  // The GPU generations dtsim ships presets for, under these names (a100-sxm is the 80 GB part, kept as it was).
  for (const char* name : {"a100-40gb-sxm", "a100-sxm", "v100-sxm2", "l40s", "h100-pcie", "h100-nvl", "b200", "h100-sxm", "h200-sxm"}) {
    INFO(name);
    CHECK_NOTHROW(load_gpu(name));
    const ClusterSpec c = load_cluster(name);  // a cluster preset of the same name
    CHECK(c.gpu.name == name);
  }
}

TEST_CASE("gpu presets: every shipped cluster loads") {
  for (const auto& e : fs::directory_iterator(config_dir() + "/clusters")) {
    if (e.path().extension() != ".json") continue;
    INFO(e.path().string());
    CHECK_NOTHROW(load_cluster(e.path().stem().string()));
  }
}

TEST_CASE("gpu presets: memory is read in GiB, and the old memory_GB key is refused by name") {
  CHECK(load_gpu("h100-sxm").memory_bytes == 80.0 * 1073741824.0);
  CHECK(load_gpu("a100-40gb-sxm").memory_bytes == 40.0 * 1073741824.0);
  CHECK(load_gpu("h200-sxm").memory_bytes == 141.0 * 1073741824.0);
  auto old = [](Json& j) {
    j.erase("memory_GiB");
    j["memory_GB"] = 80;
  };
  CHECK_THROWS_WITH(parse_edited(old), Catch::Matchers::Contains("$.memory_GB") && Catch::Matchers::Contains("renamed to memory_GiB"));
  auto both = [](Json& j) { j["memory_GB"] = 80; };
  CHECK_THROWS_WITH(parse_edited(both), Catch::Matchers::Contains("renamed to memory_GiB"));
}

TEST_CASE("gpu presets: a math mode given as null has no units, and fp32 may not be null") {
  const GpuSpec v100 = load_gpu("v100-sxm2");
  CHECK_FALSE(v100.supports(MathMode::BF16));
  CHECK(v100.peak_flops[static_cast<int>(MathMode::BF16)] == 0);
  // No TF32 units: TF32-permitted math (PyTorch's default convolutions) runs at the FP32 rate.
  CHECK_FALSE(v100.supports(MathMode::TF32));
  CHECK(v100.peak_flops[static_cast<int>(MathMode::TF32)] == v100.peak_flops[static_cast<int>(MathMode::FP32)]);
  CHECK(v100.supports(MathMode::FP16));
  const GpuSpec h100 = load_gpu("h100-sxm");
  for (int m = 0; m < kMathModes; ++m) CHECK(h100.supports(static_cast<MathMode>(m)));

  auto null_fp16 = [](Json& j) { j["peak_tflops"]["fp16"] = nullptr; };
  const GpuSpec g = parse_edited(null_fp16);
  CHECK_FALSE(g.supports(MathMode::FP16));
  CHECK(g.peak_flops[static_cast<int>(MathMode::FP16)] == 0);
  auto null_fp32 = [](Json& j) { j["peak_tflops"]["fp32"] = nullptr; };
  CHECK_THROWS_WITH(parse_edited(null_fp32), Catch::Matchers::Contains("$.peak_tflops.fp32"));
  auto missing = [](Json& j) { j["peak_tflops"].erase("bf16"); };  // named, even when absent
  CHECK_THROWS_WITH(parse_edited(missing), Catch::Matchers::Contains("$.peak_tflops.bf16") && Catch::Matchers::Contains("missing"));
  auto zero = [](Json& j) { j["peak_tflops"]["bf16"] = 0; };  // null says "none"; 0 is not a rate
  CHECK_THROWS_AS(parse_edited(zero), InputError);
}

TEST_CASE("gpu presets: basis is one of the known kinds, optional outside configs/gpus") {
  auto bad = [](Json& j) { j["basis"] = "vendor says so"; };
  CHECK_THROWS_WITH(parse_edited(bad), Catch::Matchers::Contains("$.basis") && Catch::Matchers::Contains("datasheet+measured"));
  auto none = [](Json& j) {
    j.erase("basis");
    j.erase("basis_note");
  };
  CHECK(parse_edited(none).basis == "unstated");
  auto typo = [](Json& j) { j["basis_notes"] = "x"; };
  CHECK_THROWS_WITH(parse_edited(typo), Catch::Matchers::Contains("basis_notes"));
}

TEST_CASE("gpu presets: bf16 on a GPU without bf16 units is an input error naming the GPU and the mode") {
  const ClusterSpec c = load_cluster("v100-sxm2");
  const Graph g = load_model("resnet18");
  TrainingConfig cfg;
  cfg.batch_per_gpu = 8;
  cfg.precision = Precision::BF16;
  for (const char* compute : {"auto", "roofline"}) {
    INFO(compute);
    cfg.compute_model = compute;
    CHECK_THROWS_WITH(predict(g, c, cfg), Catch::Matchers::Contains("v100-sxm2") && Catch::Matchers::Contains("bf16"));
  }
  cfg.precision = Precision::FP16;  // it has fp16 tensor cores
  CHECK(predict(g, c, cfg).iteration_s > 0);
  const study_test::Run r = study_test::run_dtsim("predict --model resnet18 --cluster v100-sxm2 --batch-per-gpu 8 --precision bf16");
  CHECK(r.code == 2);
  CHECK(r.err.find("v100-sxm2") != std::string::npos);
  CHECK(r.err.find("bf16") != std::string::npos);
}

TEST_CASE("gpu presets: compute_efficiency_by_math prices a mode on its own unit, the rest on compute_efficiency") {
  const GpuSpec v100 = load_gpu("v100-sxm2");
  const Json doc = load_json_file(config_dir() + "/gpus/v100-sxm2.json");
  const double fp32_eff = doc.at("roofline").at("compute_efficiency_by_math").at("fp32").get<double>();
  REQUIRE(fp32_eff != v100.compute_efficiency);  // else the checks below could not tell them apart
  CHECK(v100.compute_efficiency_for(MathMode::FP32) == fp32_eff);
  CHECK(v100.compute_efficiency_for(MathMode::TF32) == fp32_eff);  // no TF32 units: runs on the FP32 ones
  CHECK(v100.compute_efficiency_for(MathMode::FP16) == v100.compute_efficiency);  // tensor cores: the general figure
  // A preset without the field: every mode takes compute_efficiency.
  const GpuSpec h100 = load_gpu("h100-sxm");
  for (int m = 0; m < kMathModes; ++m) CHECK(h100.compute_efficiency_for(static_cast<MathMode>(m)) == h100.compute_efficiency);

  // The roofline prices a compute-bound V100 GEMM with the efficiency of the unit it runs on.
  auto roof = make_compute_model("roofline", v100);
  KernelDesc k{KernelKind::Gemm, Pass::Fwd, MathMode::FP32, 0, {}, "", 1e13, 1e6};
  CHECK(roof->time(k).seconds == Approx(1e13 / (15.7e12 * fp32_eff) + v100.kernel_overhead_s));
  k.math = MathMode::TF32;  // PyTorch's default convolutions: FP32 units on Volta
  CHECK(roof->time(k).seconds == Approx(1e13 / (15.7e12 * fp32_eff) + v100.kernel_overhead_s));
  k.math = MathMode::FP16;
  CHECK(roof->time(k).seconds == Approx(1e13 / (125e12 * v100.compute_efficiency) + v100.kernel_overhead_s));

  // Given on a GPU that has the unit, a mode's figure replaces compute_efficiency for that mode only.
  auto bf16_only = [](Json& j) { j["roofline"]["compute_efficiency_by_math"] = {{"bf16", 0.7}}; };
  const GpuSpec g = parse_edited(bf16_only);
  CHECK(g.compute_efficiency_for(MathMode::BF16) == 0.7);
  CHECK(g.compute_efficiency_for(MathMode::FP16) == g.compute_efficiency);
  CHECK(g.compute_efficiency_for(MathMode::TF32) == g.compute_efficiency);  // H100 has TF32 units: no fp32 borrowing
}

TEST_CASE("gpu presets: a bad compute_efficiency_by_math is an input error naming the field and the rule") {
  using Catch::Matchers::Contains;
  const std::string field = "$.roofline.compute_efficiency_by_math";
  auto set = [](Json value) { return [value](Json& j) { j["roofline"]["compute_efficiency_by_math"] = value; }; };
  CHECK_THROWS_WITH(parse_edited(set({{"fp32", 0}})), Contains(field + ".fp32") && Contains("must be in"));
  CHECK_THROWS_WITH(parse_edited(set({{"fp32", 1.5}})), Contains(field + ".fp32") && Contains("must be in"));
  CHECK_THROWS_WITH(parse_edited(set({{"fp16", "0.5"}})), Contains(field + ".fp16") && Contains("must be a number"));
  CHECK_THROWS_WITH(parse_edited(set({{"int8", 0.5}})), Contains(field) && Contains("int8"));
  CHECK_THROWS_WITH(parse_edited(set(0.5)), Contains(field));
  // A mode the GPU has no units for (null peak) has no efficiency of its own.
  CHECK_THROWS_WITH(parse_edited(set({{"tf32", 0.5}}), "v100-sxm2"), Contains(field + ".tf32") && Contains("give fp32"));
  CHECK_THROWS_WITH(parse_edited(set({{"bf16", 0.5}}), "v100-sxm2"), Contains(field + ".bf16") && Contains("no bf16 units"));

  // From the command line: exit code 2, one line naming the file, the field and the rule.
  study_test::TempDir dir("by_math");
  Json gpu = load_json_file(config_dir() + "/gpus/v100-sxm2.json");
  gpu["roofline"]["compute_efficiency_by_math"]["fp32"] = 1.5;
  const std::string gpu_path = dir.file("v100_bad.json", gpu.dump());
  Json cluster = load_json_file(config_dir() + "/clusters/v100-sxm2.json");
  cluster["gpu"] = gpu_path;
  const std::string cluster_path = dir.file("cluster.json", cluster.dump());
  const study_test::Run r = study_test::run_dtsim("predict --model resnet18 --cluster " + cluster_path + " --batch-per-gpu 8");
  CHECK(r.code == 2);
  CHECK(study_test::lines(r.err) == 1);
  CHECK(r.err.find(gpu_path) != std::string::npos);
  CHECK(r.err.find(field + ".fp32") != std::string::npos);
  CHECK(r.err.find("must be in") != std::string::npos);
}

TEST_CASE("gpu presets: dtsim roofline reports each math unit's attainable fraction, per-unit where the preset gives one") {
  const auto r = study_test::run_dtsim("roofline --model resnet18 --batch-per-gpu 8 --cluster v100-sxm2 --format json");
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  CHECK(j["compute_efficiency"].get<double>() == Approx(0.496));
  CHECK(j["compute_efficiency_by_math"]["fp32"].get<double>() == Approx(0.575));
  CHECK(j["compute_efficiency_by_math"]["tf32"].get<double>() == Approx(0.575));  // no TF32 units: the FP32 ones
  CHECK(j["compute_efficiency_by_math"]["fp16"].get<double>() == Approx(0.496));
  CHECK(j["compute_efficiency_by_math"]["bf16"].is_null());  // no bf16 units
}
