// Issue 6: dtsim's predictions of the committed measured runs, re-run on every test, so that no
// change quietly loses accuracy. Targets the project meets are checked as the issue states them; for
// the ones not met yet (docs/accuracy.md says which and why) the check is the accuracy reached so
// far, so that they can only improve.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/json_util.hpp"
#include "compute/impl/mlp/mlp.hpp"
#include "study/validate.hpp"

using namespace dtsim;

namespace {

std::vector<ValidationRow> validate_folder(const std::string& rel) {
  std::vector<MeasuredRun> runs;
  for (const auto& f : measured_run_files({std::string(DTSIM_SOURCE_DIR) + "/" + rel})) runs.push_back(parse_measured_run(load_json_file(f), f));
  return validate_runs(runs, {});
}

struct Stats {
  size_t n = 0;
  double mean = 0, median = 0, max = 0;
};

Stats abs_errors(const std::vector<ValidationRow>& rows) {
  std::vector<double> e;
  for (const auto& r : rows) e.push_back(std::fabs(r.error));
  Stats s;
  s.n = e.size();
  if (e.empty()) return s;
  std::sort(e.begin(), e.end());
  for (double x : e) s.mean += x / e.size();
  s.median = e.size() % 2 ? e[e.size() / 2] : 0.5 * (e[e.size() / 2 - 1] + e[e.size() / 2]);
  s.max = e.back();
  return s;
}

}  // namespace

TEST_CASE("accuracy: H100 harness runs within the issue's 5% mean error") {
  // 54 runs (resnet50, alexnet, vgg16 x batch 16/32/64 x fp32/bf16 x 1/2/4 GPUs); the harness
  // profile's two host costs were fitted on 4 of them (configs/frameworks/harness.json).
  Stats s = abs_errors(validate_folder("validation/data/h100-sxm/runs"));
  INFO("runs " << s.n << ", mean " << 100 * s.mean << "%, median " << 100 * s.median << "%, max " << 100 * s.max << "%");
  CHECK(s.n == 54);
  CHECK(s.mean <= 0.05);
  // Reached since the harness's optimizer is priced as its one fused kernel and the profile's host
  // costs were refitted (2026-11-28): mean 2.7%, median 1.7%, max 14.1% (alexnet b64 bf16 on 4 GPUs,
  // predicted low); before, 4.0% / 3.2% / 15.7%.
  CHECK(s.mean <= 0.03);
  CHECK(s.median <= 0.02);
  CHECK(s.max <= 0.145);
}

TEST_CASE("accuracy: PyTorch DDP and H200 runs no worse than reached (targets not met yet)") {
  // Not the targets (PyTorch: median 5%, none beyond 15%, missed: docs/accuracy.md; H200's
  // what-if median of 10% is checked by the next test). These bounds are what the model reaches now, a little above it
  // (H200 harness runs, which predate the harness's fixes: 10.0% mean, 7.2% median since the H100's
  // predictors carry a memory-bound kernel's time beyond its bytes at the SMs' rate (2026-11-28; the
  // same runs' per-layer error fell, 13.2% -> 12.8%: kernels_mlp/README.md, "Another GPU"); 9.6% and
  // 6.0% before, with the three-layer conv2d predictors of 2026-11-27). PyTorch: H100 11.0% / 6.3%, H200 15.5% / 8.9%
  // since PyTorch's own bias, pooling and activation kernels were measured (validation/data/h100-sxm/
  // op_times; 11.5% / 6.6% and 16.5% / 14.9% before). The H200's own NCHW convolution predictors
  // (2026-11-28; its held-out convolution error 15.0% -> 11.8%) moved the 45 H200 PyTorch runs, b32
  // steps the host mostly paces, 15.5% / 8.8% -> 16.2% / 9.3%, and the 36 harness runs 9.1% / 4.9% ->
  // 9.5% / 4.0%.
  struct Set {
    const char* folder;
    double mean, median;
  };
  // PyTorch's native depthwise kernels priced by their own predictors (2026-11-28, nineteenth session):
  // the 73 H100 PyTorch runs 11.1% / 6.6% -> 10.6% / 5.1% (mobilenet_v2's contiguous fp32/bf16 steps).
  // PyTorch's optimizer priced as its multi-tensor launches (twentieth session; its GPU time now within
  // 12% of torch.profiler's on every profiled model, where the per-layer pricing was 1.1-10.7x it) and the
  // host costs refitted as documented: H100 10.6% / 5.1% -> 10.9% / 5.5%, H200 16.2% / 9.3% -> 16.0% /
  // 12.7%. The over-priced optimizer had covered part of the host-paced b32 steps' missing host time
  // (resnet50 b32 on the H200 -9..-25% -> -15..-29%); with the measured host costs of pytorch-ops
  // every set improved (docs/accuracy.md, "PyTorch's optimizer as it runs").
  // Twenty-fifth session: PyTorch's runs are priced by default with pytorch-ops (measured host costs,
  // the host running ahead) instead of the `pytorch` profile fitted on four of the 73 H100 runs. Over
  // all 562 committed PyTorch runs 9.0% / 18.9% -> 6.3% / 12.3% (median / mean); this H100 set, the
  // fitted profile's own, 5.1% / 10.8% -> 6.8% / 13.8%; the H200 set 11.7% / 15.8% -> 8.2% / 14.8%.
  for (const Set& set : {Set{"validation/data/h100-sxm/pytorch", 0.14, 0.07}, Set{"validation/data/h200-sxm/runs", 0.105, 0.075},
                         Set{"validation/data/h200-sxm/pytorch", 0.165, 0.13}}) {
    Stats s = abs_errors(validate_folder(set.folder));
    INFO(set.folder << ": runs " << s.n << ", mean " << 100 * s.mean << "%, median " << 100 * s.median << "%, max " << 100 * s.max << "%");
    CHECK(s.n > 30);
    CHECK(s.mean <= set.mean);
    CHECK(s.median <= set.median);
  }
}

TEST_CASE("accuracy: the harness's b32 steps on one H200 host, as reached") {
  // validation/data/h200-sxm/runs_b32_host (2026-11-28, nineteenth session): seven models at b32, fp32
  // and bf16, on the host whose issue costs were measured beside them. Reached: mean 4.0%, median 2.6%;
  // every run within 4.4% but densenet121 (+21.3% bf16, +10.3% fp32), whose 2,171 small kernels are set
  // by the host's issue rate, which moved the same step 24.2 -> 26.5 ms on the next lent machine (docs/accuracy.md,
  // "The b32 steps and the host").
  const auto rows = validate_folder("validation/data/h200-sxm/runs_b32_host");
  Stats s = abs_errors(rows);
  INFO("runs " << s.n << ", mean " << 100 * s.mean << "%, median " << 100 * s.median << "%, max " << 100 * s.max << "%");
  CHECK(s.n == 14);
  CHECK(s.median <= 0.03);
  for (const auto& r : rows)
    if (r.run.model != "densenet121") {
      INFO(r.run.file << ": " << 100 * r.error << "%");
      CHECK(std::abs(r.error) <= 0.05);
    }
}

TEST_CASE("accuracy: H200 runs predicted from H100 predictors alone within the issue's 10% median") {
  // Issue 6's what-if target: the 81 H200 runs (36 harness, 45 PyTorch DDP) with only h100-sxm's
  // predictors visible, so every kernel is carried over by the roofline ratio. 9.6% since the conv2d
  // predictors got a third layer and PyTorch's own kernels were measured (2026-11-27; 11.9% before).
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("dtsim_whatif_" + std::to_string(::getpid()));
  fs::create_directories(root);
  fs::copy(mlp::pretrained_root() + "/h100-sxm", root / "h100-sxm", fs::copy_options::recursive);
  ::setenv("DTSIM_PREDICTOR_DIR", root.c_str(), 1);
  auto rows = validate_folder("validation/data/h200-sxm/runs");
  auto pytorch = validate_folder("validation/data/h200-sxm/pytorch");
  ::unsetenv("DTSIM_PREDICTOR_DIR");
  fs::remove_all(root);
  rows.insert(rows.end(), pytorch.begin(), pytorch.end());
  Stats s = abs_errors(rows);
  INFO("runs " << s.n << ", mean " << 100 * s.mean << "%, median " << 100 * s.median << "%, max " << 100 * s.max << "%");
  CHECK(s.n == 81);
  CHECK(s.median <= 0.10);
}

TEST_CASE("accuracy: PyTorch runs in the training modes (issue 23), as reached") {
  // Eager channels_last / AdamW / contiguous runs on 1 H100 (74) and 2 H200s (11), and the compiled
  // runs. The targets (5% median where the GPU paces, 10% overall) are met only in part
  // (docs/accuracy.md, "Training modes"); these are the figures reached, so that they only improve.
  struct Case {
    const char* folder;
    size_t runs;
    double median;
  };
  // 2026-11-28: channels_last batchnorm got per-shape predictors (kernels_mlp/README.md); its kernels now
  // match the torch.profiler lists within 3-6% (resnet18 fp32 3.72 against 3.52 ms, resnet50 bf16 14.8
  // against 14.1, mobilenet_v2 bf16 10.2 against 10.0; one factor per key had resnet18's at 5.48) and
  // the channels_last / contiguous ratio moved from 8.8% to 5.5% median (GPU-paced max 16.3% -> 5.8%).
  // The host-paced runs lost what the over-priced batchnorm had covered of their host time: 6.7% ->
  // 7.8% and 3.9% -> 6.0% median, bounds moved with them.
  // Native depthwise kernels priced (2026-11-28, nineteenth session): 7.8% -> 7.1% and 6.7% -> 5.6%.
  // PyTorch's optimizer as its multi-tensor launches (twentieth session): 7.1% -> 5.4%, 5.6% -> 6.0%,
  // 6.0% -> 5.8%, 6.6% -> 7.1%.
  // The copies of torch.compile's cut of the DDP graph (compiled_ddp_split_copies, twenty-first
  // session): compile 7.1% -> 8.1%. resnet50 moves to within 7% and resnet18 within 5% where the GPU
  // paces, while vgg16 (+3.9..+7.3% -> +9.6..+12.6%) shows what its over-priced NHWC convolutions
  // had hidden: 10.6 ms against 8.8 ms of cuDNN kernels in its b64 profile.
  // The H200's NHWC predictors retrained on PyTorch's own channels_last convolutions (kernels_conv_nhwc,
  // same session; held-out kernels 6.9-9.8% -> 4.9-7.2% MAPE, bias +-11% -> +-2%): the convolutions of
  // the compiled resnet18 b256 profile priced 3.6% over instead of 23%, and what they had covered shows:
  // its generated kernels and copies take 7.1 ms where dtsim prices 5.0. gpu2 5.8% -> 6.4%, compile
  // 8.1% -> 9.4% (vgg16 +3..+13% -> 0..+4%, resnet18 -4% -> -13%).
  // torch.compile's pooling as kernels of its own at their window-element issue rate, and the generated
  // kernels' factors refitted per kind on the resnet50 profiles (pointwise 1.03/1.02, reductions
  // 1.58/2.53; twenty-second session, validation/scripts/inductor_kernel_fit.py): compile 9.4% -> 3.1%;
  // with googlenet's three held-out runs (b64 and b128 host-paced, -33% and -9.7%; b256 +4.9%) 4.2% over 15. compile_fp32: 8 runs
  // in fp32 that no fit saw (the factors are bf16's), 3.7% median, none above 4.7%.
  // PyTorch's own bf16 batchnorm kernels priced by per-shape predictors (batchnorm/*/bf16/native, same
  // session; one factor per pass over cuDNN's had 43% / 18% MAPE on their shapes): H100 modes 4.5% ->
  // 2.6%, gpu_bound 3.8% -> 2.7%, gpu2 6.4% -> 5.8%, the H200's contiguous twins 3.5% -> 2.3%.
  for (const Case& c : {Case{"validation/data/h100-sxm/pytorch_modes", 74, 0.03}, Case{"validation/data/h100-sxm/pytorch_modes/gpu_bound", 17, 0.03},
                        // the default profile pytorch-ops (twenty-fifth session): gpu2 5.6% -> 6.5%,
                        // compile 4.2% -> 4.1%, compile_fp32 3.6% -> 4.8% (its GPU-paced steps priced
                        // 1 point shorter), contiguous 2.2% -> 2.6%, channels_last 3.6% -> 3.5%
                        Case{"validation/data/h200-sxm/pytorch_modes/gpu2", 11, 0.066},
                        Case{"validation/data/h200-sxm/pytorch_modes/compile", 15, 0.045},
                        Case{"validation/data/h200-sxm/pytorch_modes/compile_fp32", 8, 0.049},
                        // eager channels_last on one H200 at a batch and its double, held out (twenty-second
                        // session): 3.8% over 24, SGD where the GPU paces 2.5%; AdamW's host-paced b128 -21..-45%
                        Case{"validation/data/h200-sxm/pytorch_modes/channels_last", 24, 0.04},
                        // and their contiguous twins (same session): 3.5% over 16
                        Case{"validation/data/h200-sxm/pytorch_modes/contiguous", 16, 0.027}}) {
    Stats s = abs_errors(validate_folder(c.folder));
    INFO(c.folder << ": runs " << s.n << ", median " << 100 * s.median << "%, max " << 100 * s.max << "%");
    CHECK(s.n == c.runs);
    // reached: 6.7%, 8.4%, 3.9% (3.1% before the carry of 2026-11-28), 6.6% (12 compile-cuda-graphs
    // runs at b32-b256 since 2026-11-28's eighteenth session, with the bias kernels fused as Inductor runs them)
    CHECK(s.median <= c.median);
  }
  // torch.compile(mode="reduce-overhead") where the GPU paces (a run at least 1.6 times as long as the
  // same model's at half its batch): the 5% median. Reached 4.5% over 5 runs (vgg16 b64 and b128,
  // resnet18, resnet50 and mobilenet_v2 at b256) while the optimizer was priced per layer; with its
  // multi-tensor launches (twentieth session) 6.7%: the compiled steps are under-priced by what the
  // optimizer's 1.1-10.7x over-pricing had covered. The worst, resnet50 b256 -15.7%, lacked the 18
  // direct_copy_kernel copies of its profile (4.6 ms); priced since (twenty-first session, the copies of
  // the DDP graph's cut): 6.3% median, resnet50 b256 -6.3%, the worst vgg16 b64 +12.6%. With the
  // retrained NHWC predictors (above): 5.9%, the worst resnet18 b256 -14.3% (its generated kernels).
  // With the compiled pooling kernels and the refitted factors (above): 2.6%, the worst resnet50 b256 -4.4%.
  const auto paced_errors = [](const char* folder) {
    const auto compiled = validate_folder(folder);
    std::vector<double> paced;
    for (const auto& r : compiled)
      for (const auto& half : compiled)
        if (half.run.model == r.run.model && 2 * half.run.batch_per_gpu == r.run.batch_per_gpu &&
            r.run.iteration_s >= 1.6 * half.run.iteration_s)
          paced.push_back(std::fabs(r.error));
    std::sort(paced.begin(), paced.end());
    return paced;
  };
  const std::vector<double> paced = paced_errors("validation/data/h200-sxm/pytorch_modes/compile");
  REQUIRE(paced.size() == 5);
  CHECK(paced[2] <= 0.03);
  CHECK(paced.back() <= 0.05);
  // fp32, held out (twenty-second session): the four larger batches, -4.6..+2.9%; with the default
  // profile pytorch-ops (twenty-fifth session) a median 4.0%, the worst 5.2%.
  const std::vector<double> paced_fp32 = paced_errors("validation/data/h200-sxm/pytorch_modes/compile_fp32");
  REQUIRE(paced_fp32.size() == 4);
  CHECK((paced_fp32[1] + paced_fp32[2]) / 2 <= 0.041);
  CHECK(paced_fp32.back() <= 0.053);
}

TEST_CASE("accuracy: PyTorch transformer runs (issue 25), as reached") {
  // The attention backward is priced from cuDNN's kernel, the one the steps run, and vit_b_16's
  // nn.MultiheadAttention with the kernels its permuted residual stream adds (docs/accuracy.md,
  // "Transformers"). H200, 1 and 2 GPUs: the median (8% or less) and maximum (15%) are met,
  // 4.0% and 10.3% as reached.
  Stats h200 = abs_errors(validate_folder("validation/data/h200-sxm/pytorch_transformers/gpu1"));
  Stats h200_2 = abs_errors(validate_folder("validation/data/h200-sxm/pytorch_transformers/gpu2"));
  CHECK(h200.n == 4);
  CHECK(h200_2.n == 8);
  CHECK(std::max(h200.max, h200_2.max) <= 0.15);
  CHECK(h200_2.median <= 0.08);
  // H100, 23 one-GPU runs: the median as reached (1.7%; 3.0% since AdamW is priced as its multi-tensor
  // launches, 3.69 against 3.70 ms measured for gpt2_small where the per-layer pricing gave 5.06: the
  // bf16 steps were already under-priced, -0.3..-4.5%, and the optimizer had covered part of it); the
  // host-paced short bf16 steps miss by up to 52% (docs/accuracy.md, "Transformers"), so no bound on
  // the maximum yet.
  Stats h100 = abs_errors(validate_folder("validation/data/h100-sxm/pytorch_transformers"));
  INFO("H100 median " << 100 * h100.median << "%, max " << 100 * h100.max << "%");
  CHECK(h100.n == 23);
  CHECK(h100.median <= 0.035);
}


TEST_CASE("accuracy: transformer runs' peak memory, with the logits the training loop holds and the loss's backward") {
  // Nothing fitted: the loss's backward holds nll_loss's FP32 gradient (and in FP32 log_softmax's),
  // and `out = model(x)` keeps the logits through the backward pass (sim/memory.cpp). Reached:
  // mean 0.6% / max 5.6% (H100, 23 runs), 1.1% / 6.1% (2 x H200), 0.1% / 0.3% (4 x H200); before,
  // 15.3% / 26.1% on the H100 runs, every one predicted low.
  for (const char* folder : {"validation/data/h100-sxm/pytorch_transformers", "validation/data/h200-sxm/pytorch_transformers/gpu2",
                             "validation/data/h200-sxm/pytorch_transformers/gpu4"}) {
    double sum = 0, worst = 0;
    int n = 0;
    for (const auto& r : validate_folder(folder)) {
      if (!r.has_memory) continue;
      INFO(r.run.file << ": memory error " << 100 * r.memory_error << "%");
      sum += std::fabs(r.memory_error), worst = std::max(worst, std::fabs(r.memory_error)), ++n;
    }
    INFO(folder);
    REQUIRE(n >= 6);
    CHECK(sum / n <= 0.02);
    CHECK(worst <= 0.07);
  }
}


TEST_CASE("validate: runs replayed from CUDA graphs have no peak memory to compare (the graphs' pool is not counted)") {
  auto graphs = validate_folder("validation/data/h200-sxm/pytorch_modes/compile");
  const auto fp32 = validate_folder("validation/data/h200-sxm/pytorch_modes/compile_fp32");
  graphs.insert(graphs.end(), fp32.begin(), fp32.end());
  REQUIRE(graphs.size() == 23);
  for (const auto& r : graphs) {
    INFO(r.run.file);
    CHECK(r.run.peak_allocated_bytes > 0);  // the file has a count, too low to be the step's
    CHECK_FALSE(r.has_memory);
  }
  const auto eager = validate_folder("validation/data/h200-sxm/pytorch_transformers/gpu1");
  REQUIRE_FALSE(eager.empty());
  for (const auto& r : eager) CHECK(r.has_memory);
}

TEST_CASE("accuracy: the channels_last / contiguous time ratio on one H200 where the GPU paces both (issue 23)") {
  // pytorch_modes/channels_last and /contiguous (twenty-second session, held out): the same SGD
  // configurations in both layouts at a batch and its double. A pair counts where both runs are at
  // least 1.6 times their half-batch twin's time. The issue asks for 5%; reached: median 1.4%, max 5.2%
  // (resnet50 b256 bf16, whose contiguous step was priced +7.1%); 2.2% since PyTorch's own bf16 batchnorm
  // has predictors of its own (batchnorm/*/bf16/native).
  const auto cl = validate_folder("validation/data/h200-sxm/pytorch_modes/channels_last");
  const auto ct = validate_folder("validation/data/h200-sxm/pytorch_modes/contiguous");
  const auto paced = [](const std::vector<ValidationRow>& rows, const ValidationRow& r) {
    for (const auto& half : rows)
      if (half.run.model == r.run.model && half.run.precision == r.run.precision && half.run.mode.optimizer == r.run.mode.optimizer &&
          2 * half.run.batch_per_gpu == r.run.batch_per_gpu)
        return r.run.iteration_s >= 1.6 * half.run.iteration_s;
    return false;
  };
  std::vector<double> diffs;
  for (const auto& a : cl)
    for (const auto& b : ct)
      if (a.run.model == b.run.model && a.run.precision == b.run.precision && a.run.batch_per_gpu == b.run.batch_per_gpu &&
          a.run.mode.optimizer == b.run.mode.optimizer && paced(cl, a) && paced(ct, b)) {
        const double measured = a.run.iteration_s / b.run.iteration_s, predicted = a.predicted_s / b.predicted_s;
        INFO(a.run.model << " b" << a.run.batch_per_gpu << " " << a.run.precision << ": measured " << measured << ", predicted " << predicted);
        CHECK(std::fabs(predicted / measured - 1) <= 0.03);
        diffs.push_back(std::fabs(predicted / measured - 1));
      }
  REQUIRE(diffs.size() == 5);
  std::sort(diffs.begin(), diffs.end());
  CHECK(diffs[2] <= 0.02);
}

TEST_CASE("accuracy: torch.compile without CUDA graphs against eager, where the host paces both (issue 23)") {
  // Compiled and eager steps of the same configuration from one call on one H200, batch 16 and 32
  // (pytorch_modes/host_paced, twenty-first session; compile_b16, twenty-third), held out. The compiled
  // step is the slower, 1.04-1.20 times eager: its wrapper pays the host what eager pays per layer
  // (host_costs.py --compile) and more per compiled graph. dtsim had priced the generated kernels at a
  // launch each and predicted 0.84-0.98 times eager, and 0.36-0.39 with the pytorch-ops profile (its
  // generated kernels cost the host nothing); with the profiles' compiled_host 1.04-1.19 (pytorch).
  std::vector<ValidationRow> rows = validate_folder("validation/data/h200-sxm/pytorch_modes/host_paced");
  for (const auto& r : validate_folder("validation/data/h200-sxm/pytorch_modes/compile_b16")) rows.push_back(r);
  size_t pairs = 0;
  for (const auto& c : rows)
    for (const auto& e : rows)
      if (c.run.mode.execution == "compile" && e.run.mode.execution == "eager" && c.run.model == e.run.model &&
          c.run.batch_per_gpu == e.run.batch_per_gpu && c.run.file.substr(0, c.run.file.rfind('/')) == e.run.file.substr(0, e.run.file.rfind('/'))) {
        const double measured = c.run.iteration_s / e.run.iteration_s, predicted = c.predicted_s / e.predicted_s;
        INFO(c.run.model << " b" << c.run.batch_per_gpu << ": measured " << measured << ", predicted " << predicted);
        CHECK(predicted > 1.0);  // the direction: compiling does not speed up a host-paced step
        CHECK(std::fabs(predicted / measured - 1) <= 0.15);  // reached: 13.4% (resnet18 b32), the rest within 8.7%
        ++pairs;
      }
  CHECK(pairs == 6);
}

TEST_CASE("accuracy: torch.compile's default mode against its eager twin on the same host, every pair dtsim prices as host-paced (issue 23)") {
  // Twenty-sixth session (validation/scripts/compile_eager_pairs.py). Where the host paces, a step's
  // absolute error is mostly the host's speed: one H200 VM issued the same compiled mobilenet_v2 step
  // in 45.1 and then 36.5 ms in one process, and three compiled models took 1.14-1.25 times the host
  // time dtsim prices where their eager twins took 1.23-1.50 (model_host_time, the twenty-sixth
  // session's calls). The eager twin measured minutes apart in the same process cancels that speed.
  // Over the 9 pairs dtsim prices as host-paced both ways: median 6.3%, the worst mobilenet_v2 b32
  // (+28.5%, compiled 0.80 times eager) and densenet121 b32 (-28.2%, 1.42 times); their absolute
  // errors, compiled: median 11.2%.
  std::vector<ValidationRow> rows;
  for (const char* f : {"host_paced", "compile_b16", "compile_b32"})
    for (const auto& r : validate_folder(std::string("validation/data/h200-sxm/pytorch_modes/") + f)) rows.push_back(r);
  std::vector<double> ratio_errors;
  for (const auto& c : rows)
    for (const auto& e : rows)
      if (c.run.mode.execution == "compile" && e.run.mode.execution == "eager" && c.run.model == e.run.model &&
          c.run.batch_per_gpu == e.run.batch_per_gpu && c.run.precision == e.run.precision &&
          c.run.file.substr(0, c.run.file.rfind('/')) == e.run.file.substr(0, e.run.file.rfind('/')) &&
          c.bottleneck == "host" && e.bottleneck == "host") {
        const double measured = c.run.iteration_s / e.run.iteration_s, predicted = c.predicted_s / e.predicted_s;
        INFO(c.run.model << " b" << c.run.batch_per_gpu << ": measured " << measured << ", predicted " << predicted);
        CHECK(std::fabs(predicted / measured - 1) <= 0.30);
        ratio_errors.push_back(std::fabs(predicted / measured - 1));
      }
  REQUIRE(ratio_errors.size() == 9);
  std::sort(ratio_errors.begin(), ratio_errors.end());
  CHECK(ratio_errors[4] <= 0.07);  // the median; issue 23's overall target is 10%
}

TEST_CASE("accuracy: torch.compile's default mode and channels_last AdamW under the pytorch-ops profile (held out)") {
  // Twenty-fourth session: pytorch-ops's host runs ahead of the GPU (a step takes the longer of the host's
  // issue time and the GPU's timeline), its fixed host cost per step is measured (the chains' intercept,
  // 1.12 ms) and its convolutions' and batchnorms' host costs are measured at the models' sizes, per
  // layout (host_shape_factors.py). No step time entered any of them. The 14 default-mode compiled H200
  // runs went 16.6% -> 11.7% median (max 31.0% -> 27.2%; 9.6% with the convolutions' contiguous factors
  // alone, on both layouts, before the channels_last chains were measured), short of issue 23's 10%; with
  // the three compiled runs of compile_b32, measured after the profile was set, 17 runs at 10.1% (the
  // profile before: 14.6%). The 8 channels_last AdamW runs of pytorch_modes/channels_last 11.2% -> 4.5% (max 11.9%).
  ValidationOptions opt;
  opt.framework = "pytorch-ops";
  auto folder = [&](const std::string& rel) {
    std::vector<MeasuredRun> runs;
    for (const auto& f : measured_run_files({std::string(DTSIM_SOURCE_DIR) + "/" + rel})) runs.push_back(parse_measured_run(load_json_file(f), f));
    return validate_runs(runs, opt);
  };
  // Twenty-fifth session: this set had taken compile_b16's three eager twins for compiled runs and
  // left host_paced's three compiled runs out; it now holds every default-mode compiled H200 run, with
  // the first fp32 ones, predicted before they were measured (compile_fp32_default: resnet18 b128
  // -3.4%, vgg16 b64 +2.9%, resnet50 b128 -5.2%, mobilenet_v2 b128 (host-paced) -25.2%). 21 runs:
  // median 10.1%, mean 12.7%, max 35.2% (`pytorch`: 25.4% / 26.1% / 52.2%).
  std::vector<ValidationRow> compiled;
  // Twenty-sixth session: compile_repeat ran four of compile_no_graphs's configurations again on
  // another H200 host, predicted before the call: vgg16 b64 (GPU-paced) +1.0%, the host-paced resnet18
  // b128 -17.4%, resnet50 b128 -26.3%, mobilenet_v2 b128 -14.6% (their eager twins, GPU-paced, within
  // -3.3..+0.4%). 25 runs: median 11.2%, mean 13.0%, max 35.2%.
  for (const char* f : {"compile_b16", "compile_no_graphs", "compile_b32", "host_paced", "compile_fp32_default", "compile_repeat"})
    for (const auto& r : folder(std::string("validation/data/h200-sxm/pytorch_modes/") + f))
      if (r.run.mode.execution == "compile") compiled.push_back(r);
  Stats s = abs_errors(compiled);
  INFO("compile default mode: runs " << s.n << ", median " << 100 * s.median << "%, max " << 100 * s.max << "%");
  CHECK(s.n == 25);
  CHECK(s.median <= 0.115);  // reached 11.2% (10.1% over the 21 before compile_repeat); issue 23's overall target is 10%
  CHECK(s.max <= 0.36);     // mobilenet_v2 b32 compiled +35.2%
  std::vector<ValidationRow> paced;
  for (const auto& r : compiled)
    if (r.bottleneck != "host") paced.push_back(r);
  Stats p = abs_errors(paced);
  INFO("compile default mode where dtsim prices the GPU as the pace: runs " << p.n << ", median " << 100 * p.median << "%");
  CHECK(p.n == 7);
  CHECK(p.median <= 0.05);  // reached 2.9% (vgg16 b64 x3 and b128 within -0.6..+2.9%, resnet50 b256 -5.3% and b128 fp32 -5.2%, resnet18 b256 -10.0%); issue 23's 5%
  std::vector<ValidationRow> adamw;
  for (const auto& r : folder("validation/data/h200-sxm/pytorch_modes/channels_last"))
    if (r.run.mode.optimizer == "adamw" && r.run.mode.memory_format == "channels_last") adamw.push_back(r);
  Stats a = abs_errors(adamw);
  INFO("channels_last AdamW: runs " << a.n << ", median " << 100 * a.median << "%, max " << 100 * a.max << "%");
  CHECK(a.n == 8);
  CHECK(a.median <= 0.06);  // issue 23's overall target is 10%
  CHECK(a.max <= 0.13);
  // Twenty-fifth session: what a replayed compiled module still costs the host (compiled_cuda_graphs_host,
  // fitted on model_host_time.py's batch-1 rows by replay_host_fit.py; no step time entered it). The 27
  // compile-cuda-graphs runs (H100 4, H200 23): median 4.9% -> 4.7%, mean 10.6% -> 6.9%, max 48.7% ->
  // 32.2%; the host-paced b64 steps had been priced as their GPU time, -17..-49%. Then three b32 runs
  // predicted before they were measured (compile_graphs_held_out): googlenet +0.9%, mobilenet_v2 -1.2%,
  // resnet50 -24.3% (the default profile, whose replay costs the host nothing: -59..-63%).
  std::vector<ValidationRow> graphs = folder("validation/data/h100-sxm/pytorch_modes/compile");
  for (const char* f : {"validation/data/h200-sxm/pytorch_modes/compile", "validation/data/h200-sxm/pytorch_modes/compile_fp32",
                        "validation/data/h200-sxm/pytorch_modes/compile_graphs_held_out"})
    for (const auto& r : folder(f)) graphs.push_back(r);
  graphs.erase(std::remove_if(graphs.begin(), graphs.end(), [](const ValidationRow& r) { return r.run.mode.execution != "compile-cuda-graphs"; }),
               graphs.end());
  Stats g = abs_errors(graphs);
  INFO("compile-cuda-graphs: runs " << g.n << ", median " << 100 * g.median << "%, mean " << 100 * g.mean << "%, max " << 100 * g.max << "%");
  CHECK(g.n == 30);
  CHECK(g.median <= 0.05);  // issue 23's overall target is 10%
  CHECK(g.mean <= 0.075);
  CHECK(g.max <= 0.33);     // googlenet b64 +32.2% (measured 15.3 ms, its batch-1 host 19.0 ms on another machine)
}

TEST_CASE("accuracy: torch.compile's default mode on the transformers, held out (issue 23)") {
  // Twenty-sixth session, one H200 (validation/data/h200-sxm/pytorch_transformers/compile), predicted
  // before the call: the first compiled transformer steps. gpt2_small b16 T = 1024 was priced +29.6%
  // (60.55 ms against 46.73): eager GPT-2's LM head (N = 50257) runs cuBLAS's align1 kernels, and
  // Inductor pads it (the profiles' compiled_shape_padding, sim/schedule.cpp pad_misaligned_gemms);
  // with the padding -9.2%, and -3.6% with the contiguous inductor_* factors fitted on this step's and
  // vit_b_16's torch.profiler lists (so these two are not held out from that fit). The other compiled
  // steps, host-paced in dtsim's pricing, did not move: gpt2_small T = 512 +6.6%, bert_base -8.5%
  // (compiled slower than eager, as predicted), vit_b_16 +8.4%.
  const auto rows = validate_folder("validation/data/h200-sxm/pytorch_transformers/compile");
  REQUIRE(rows.size() == 8);
  double gpt2_compiled = 0, gpt2_eager = 0, gpt2_compiled_measured = 0, gpt2_eager_measured = 0;
  for (const auto& r : rows) {
    INFO(r.run.file << ": " << 100 * r.error << "%");
    CHECK(std::fabs(r.error) <= (r.run.mode.execution == "compile" ? 0.10 : 0.08));  // reached 9.2% and 7.1%
    if (r.run.model == "gpt2_small" && r.run.sequence_length == 1024) {
      (r.run.mode.execution == "compile" ? gpt2_compiled : gpt2_eager) = r.predicted_s;
      (r.run.mode.execution == "compile" ? gpt2_compiled_measured : gpt2_eager_measured) = r.run.iteration_s;
    }
  }
  REQUIRE(gpt2_eager > 0);
  REQUIRE(gpt2_compiled > 0);
  // Compiling takes 37% off the T = 1024 step (46.7 against 74.7 ms); dtsim takes 40%.
  CHECK(gpt2_compiled / gpt2_eager == Approx(gpt2_compiled_measured / gpt2_eager_measured).epsilon(0.1));
}

TEST_CASE("accuracy: compiled transformers at GPU-paced sizes, predicted before measured (issue 23)") {
  // Twenty-sixth session, one H200 (validation/data/h200-sxm/pytorch_transformers/compile_held_out),
  // after the shape padding was priced: a held-out check of it. gpt2_small compiled b32 T = 1024
  // -11.3% and T = 512 -4.6% (+29.9% and +31.4% without the padding), fp32 b16 +0.6%; bert_base
  // compiled b64 and b128 -24.6% and -24.5%. Then the transformers' generated kernels got factors of
  // their own (kernel_time_factors' contiguous inductor_* keys, fitted on gpt2_small's and vit_b_16's
  // profiles, bert_base's held out: +0% forward, +9% backward) and nn.MultiheadAttention's layout
  // copies were dropped under torch.compile (vit_b_16's compiled profile has none): gpt2_small -4.0%
  // and -3.4%, fp32 +0.2%, bert_base -15.5% and -15.1%. BERT's rest: its MLM head's bwd_weight matmul
  // (30522 x 768, K = rows), priced 0.95 ms where eager cuBLAS takes 3.1 ms at b32 on align2 kernels
  // (the predictor is out of its range there, in eager too), its sliced logits' copies (2.6 ms at b32,
  // priced at the bandwidth, 0.4 ms) and the loss. The eager twins: -6.1..+0.6%.
  const auto rows = validate_folder("validation/data/h200-sxm/pytorch_transformers/compile_held_out");
  REQUIRE(rows.size() == 10);
  for (const auto& r : rows) {
    INFO(r.run.file << ": " << 100 * r.error << "%");
    if (r.run.mode.execution == "eager") CHECK(std::fabs(r.error) <= 0.07);
    else if (r.run.model == "gpt2_small") CHECK(std::fabs(r.error) <= 0.05);
    else CHECK(std::fabs(r.error) <= 0.16);  // bert_base, named above
  }
}
