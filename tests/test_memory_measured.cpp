// Peak memory against measurement (the target: within 10%): every committed measured run that has a
// steady-state peak (memory.peak_allocated_bytes: torch.cuda.max_memory_allocated over the measured
// iterations, counters reset after warm-up) is predicted by `dtsim validate`'s path, with the input
// batches the run kept on the GPU, and compared.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "core/json_util.hpp"
#include "study/validate.hpp"

using namespace dtsim;
namespace fs = std::filesystem;

TEST_CASE("memory: predicted peak within 10% (or a stated wider tolerance) of every measured steady-state peak") {
  // Wider tolerances, each stated with its reason (docs/accuracy.md, "Peak memory"): these runs hold
  // one FP32 copy of the parameters more than the training step needs, a transient of the warm-up
  // (DDP's first bucket layout, released by NCCL's watchdog on its own schedule) that the peak
  // counter caught because it was reset right after the warm-up. The same configurations measured
  // after a 2 s settle (validation/data/h100-sxm/pytorch_settled, next test) do not carry it.
  const std::map<std::string, double> tolerance = {
      {"alexnet_b16_1gpu_bf16", 0.17}, {"alexnet_b16_1gpu_fp32", 0.17}, {"alexnet_b32_1gpu_bf16", 0.17},
      {"alexnet_b32_1gpu_fp32", 0.17}, {"alexnet_b64_1gpu_bf16", 0.17}, {"alexnet_b64_1gpu_fp32", 0.17},
      {"vgg16_b16_1gpu_fp32", 0.15},   {"vgg16_b32_1gpu_fp32", 0.12}};
  std::vector<std::string> files;
  for (const auto& gpu_dir : fs::directory_iterator(std::string(DTSIM_SOURCE_DIR) + "/validation/data")) {
    fs::path dir = gpu_dir.path() / "pytorch";
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".json") files.push_back(e.path().string());
  }
  int compared = 0;
  ValidationOptions opt;
  opt.compute_model = "roofline";  // only the memory is checked here; roofline is the fast path
  for (const auto& f : files) {
    MeasuredRun run = parse_measured_run(load_json_file(f), f);
    if (run.peak_allocated_bytes <= 0) continue;  // warm-up peaks only: not comparable
    ValidationRow row = validate_run(run, opt);
    REQUIRE(row.has_memory);
    const std::string label = run_label(run);
    auto it = tolerance.find(label);
    const double tol = it == tolerance.end() ? 0.10 : it->second;
    INFO(label << ": measured " << run.peak_allocated_bytes / 1e9 << " GB, predicted " << row.predicted_peak_bytes / 1e9 << " GB ("
               << row.predicted_peak_phase << "), error " << 100 * row.memory_error << "%, tolerance " << 100 * tol << "%");
    CHECK(std::fabs(row.memory_error) <= tol);
    ++compared;
  }
  CHECK(compared >= 22);  // the 22 one-GPU PyTorch runs on H100 (validation/data/h100-sxm/pytorch)
}

TEST_CASE("memory: predicted peak within 10% of every settled steady-state peak (pytorch_settled)") {
  // The 22 one-GPU configurations again, measured with ddp_reference.py --settle-s 2: no exceptions.
  const std::string dir = std::string(DTSIM_SOURCE_DIR) + "/validation/data/h100-sxm/pytorch_settled";
  ValidationOptions opt;
  opt.compute_model = "roofline";
  int compared = 0;
  for (const auto& f : measured_run_files({dir})) {
    MeasuredRun run = parse_measured_run(load_json_file(f), f);
    REQUIRE(run.peak_allocated_bytes > 0);
    ValidationRow row = validate_run(run, opt);
    REQUIRE(row.has_memory);
    INFO(run_label(run) << ": measured " << run.peak_allocated_bytes / 1e9 << " GB, predicted " << row.predicted_peak_bytes / 1e9
                        << " GB (" << row.predicted_peak_phase << "), error " << 100 * row.memory_error << "%");
    CHECK(std::fabs(row.memory_error) <= 0.10);
    ++compared;
  }
  CHECK(compared == 22);
}

#include "sim/memory.hpp"
#include "workload/model_json.hpp"
#include "sim/predict.hpp"

TEST_CASE("memory: predicted peak within 10% of the instrumented re-runs (validation/data/h100-sxm/memory_phases.txt)") {
  // Largest of the forward, backward and optimizer-step peaks (MB = 1e6 bytes) of iteration 6 of
  // validation/pytorch/memory_phases.py, ddp_reference.py's loop with 4 input batches, 1 x H100,
  // PyTorch 2.11: the peak without the extra parameter copy some committed runs carry.
  struct Case {
    const char* model;
    int64_t batch;
    Precision p;
    double peak_MB;
  };
  const Case cases[] = {{"alexnet", 16, Precision::FP32, 1332.8}, {"alexnet", 64, Precision::BF16, 1449.6},
                        {"vgg16", 16, Precision::FP32, 3518.4},   {"vgg16", 16, Precision::BF16, 3185.0},
                        {"vgg16", 64, Precision::FP32, 7214.2},   {"vgg16", 64, Precision::BF16, 5353.0},
                        {"resnet50", 32, Precision::FP32, 3235.4}, {"mobilenet_v2", 32, Precision::FP32, 2724.6}};
  const ClusterSpec c = load_cluster("h100-sxm");
  for (const Case& k : cases) {
    const MemoryFit m = memory_fit(load_model(k.model), k.batch, k.p, 1, c.gpu, default_memory_spec(), 4);
    const double err = m.allocated_peak_bytes / (k.peak_MB * 1e6) - 1;
    INFO(k.model << " b" << k.batch << ": measured " << k.peak_MB << " MB, predicted " << m.allocated_peak_bytes / 1e6 << " MB (" << m.peak_phase
                 << "), error " << 100 * err << "%");
    CHECK(std::fabs(err) <= 0.10);
  }
}
