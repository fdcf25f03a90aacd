// dtsim's predictions of the committed measured runs, re-run on every test, so that no change
// quietly loses accuracy. Targets the project meets are checked as they are stated (docs/accuracy.md);
// for the ones not met yet (docs/accuracy.md says which and why) the check is the accuracy reached, a
// little above it, so that it can only improve.
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

TEST_CASE("accuracy: H100 harness runs within the 5% mean error target") {
  // 54 runs (resnet50, alexnet, vgg16 x batch 16/32/64 x fp32/bf16 x 1/2/4 GPUs); the harness
  // profile's two host costs were fitted on 4 of them (configs/frameworks/harness.json).
  Stats s = abs_errors(validate_folder("validation/data/h100-sxm/runs"));
  INFO("runs " << s.n << ", mean " << 100 * s.mean << "%, median " << 100 * s.median << "%, max " << 100 * s.max << "%");
  CHECK(s.n == 54);
  CHECK(s.mean <= 0.05);
  // The bound reached, a little above it: the worst run is alexnet b64 bf16 on 4 GPUs, predicted
  // low (docs/accuracy.md has today's figures).
  CHECK(s.mean <= 0.03);
  CHECK(s.median <= 0.02);
  CHECK(s.max <= 0.145);
}

TEST_CASE("accuracy: PyTorch DDP and H200 runs no worse than reached (targets not met yet)") {
  // Not the stated targets (PyTorch: median 5%, none beyond 15%, missed: docs/accuracy.md, "What
  // is known to miss"; the H200's what-if median of 10% is checked by the next test). These bounds are
  // what the model reaches, a little above it. The 36 H200 harness runs predate the harness's fixes
  // (its 1 GiB workspace cap and slow bias kernels: validation/data/h200-sxm/runs/README.md).
  struct Set {
    const char* folder;
    double mean, median;
  };
  // PyTorch's runs are priced with their default profile, pytorch-ops (host costs measured per
  // layer type, the host running ahead of the GPU); this H100 set is the one the fitted `pytorch`
  // profile's two host costs were fitted on, which is why that profile does better on it.
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
  // validation/data/h200-sxm/runs_b32_host: seven models at b32, fp32 and bf16, on the host whose
  // issue costs were measured beside them. Every run within 5% but densenet121, whose 2,171 small
  // kernels are set by the host's issue rate, which moved the same step 24.2 -> 26.5 ms on the next
  // lent machine (docs/accuracy.md, "What is known to miss").
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

TEST_CASE("accuracy: H200 runs predicted from H100 predictors alone within the 10% median target") {
  // The what-if target: the 81 H200 runs (36 harness, 45 PyTorch DDP) with only h100-sxm's
  // predictors visible, so every kernel is carried over from the H100 (roofline ratio and SM issue rate).
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

TEST_CASE("accuracy: PyTorch runs in the training modes, as reached") {
  // Eager channels_last / AdamW / contiguous runs on 1 H100 (74) and 2 H200s (11), and the compiled
  // runs. The targets (5% median where the GPU paces, 10% overall) are met only in part
  // (docs/accuracy.md, "Training modes"); these are the figures reached, so that they only improve.
  struct Case {
    const char* folder;
    size_t runs;
    double median;
  };
  // The bounds are the medians reached, a little above them (docs/accuracy.md's per-folder table has
  // today's figures); the host-paced runs of these folders move with the host costs, the GPU-paced
  // ones with the kernel predictors.
  for (const Case& c : {Case{"validation/data/h100-sxm/pytorch_modes", 74, 0.03}, Case{"validation/data/h100-sxm/pytorch_modes/gpu_bound", 17, 0.03},
                        // the H200 folders, priced with the default profile pytorch-ops
                        Case{"validation/data/h200-sxm/pytorch_modes/gpu2", 11, 0.066},
                        Case{"validation/data/h200-sxm/pytorch_modes/compile", 15, 0.045},
                        Case{"validation/data/h200-sxm/pytorch_modes/compile_fp32", 8, 0.049},
                        // eager channels_last on one H200 at a batch and its double, held out; AdamW's
                        // host-paced b128 steps are the misses (-21..-45%)
                        Case{"validation/data/h200-sxm/pytorch_modes/channels_last", 24, 0.04},
                        // and their contiguous twins, held out
                        Case{"validation/data/h200-sxm/pytorch_modes/contiguous", 16, 0.027}}) {
    Stats s = abs_errors(validate_folder(c.folder));
    INFO(c.folder << ": runs " << s.n << ", median " << 100 * s.median << "%, max " << 100 * s.max << "%");
    CHECK(s.n == c.runs);
    // the compiled runs are the b32-b256 compile-cuda-graphs runs, with the bias kernels fused
    // as Inductor runs them
    CHECK(s.median <= c.median);
  }
  // torch.compile(mode="reduce-overhead") where the GPU paces (a run at least 1.6 times as long as the
  // same model's at half its batch): the target's 5% median, over 5 runs (vgg16 b64 and b128, resnet18,
  // resnet50 and mobilenet_v2 at b256).
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
  // fp32, held out (the generated-kernel factors are bf16's): the four larger batches.
  const std::vector<double> paced_fp32 = paced_errors("validation/data/h200-sxm/pytorch_modes/compile_fp32");
  REQUIRE(paced_fp32.size() == 4);
  CHECK((paced_fp32[1] + paced_fp32[2]) / 2 <= 0.041);
  CHECK(paced_fp32.back() <= 0.053);
}

TEST_CASE("accuracy: PyTorch transformer runs, as reached") {
  // The attention backward is priced from cuDNN's kernel, the one the steps run, and vit_b_16's
  // nn.MultiheadAttention with the kernels its permuted residual stream adds (docs/accuracy.md,
  // "Transformers"). H200, 1 and 2 GPUs: the target's median (8% or less) and maximum (15%) are met.
  Stats h200 = abs_errors(validate_folder("validation/data/h200-sxm/pytorch_transformers/gpu1"));
  Stats h200_2 = abs_errors(validate_folder("validation/data/h200-sxm/pytorch_transformers/gpu2"));
  CHECK(h200.n == 4);
  CHECK(h200_2.n == 8);
  CHECK(std::max(h200.max, h200_2.max) <= 0.15);
  CHECK(h200_2.median <= 0.08);
  // H100, 23 one-GPU runs: the median as reached; the host-paced short bf16 steps miss by up to
  // about half (docs/accuracy.md, "Transformers"), so no bound on the maximum yet.
  Stats h100 = abs_errors(validate_folder("validation/data/h100-sxm/pytorch_transformers"));
  INFO("H100 median " << 100 * h100.median << "%, max " << 100 * h100.max << "%");
  CHECK(h100.n == 23);
  CHECK(h100.median <= 0.035);
}


TEST_CASE("accuracy: transformer runs' peak memory, with the logits the training loop holds and the loss's backward") {
  // Nothing fitted: the loss's backward holds nll_loss's FP32 gradient (and in FP32 log_softmax's),
  // and `out = model(x)` keeps the logits through the backward pass (sim/memory.cpp). Without them every
  // H100 run's peak was predicted low, by up to a quarter.
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

TEST_CASE("accuracy: the channels_last / contiguous time ratio on one H200 where the GPU paces both") {
  // pytorch_modes/channels_last and /contiguous (held out): the same SGD configurations in both
  // layouts at a batch and its double. A pair counts where both runs are at least 1.6 times their
  // half-batch twin's time. The target is 5%.
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

TEST_CASE("accuracy: torch.compile without CUDA graphs against eager, where the host paces both") {
  // Compiled and eager steps of the same configuration from one call on one H200, batch 16 and 32
  // (pytorch_modes/host_paced and compile_b16), held out. The compiled step is the slower, 1.04-1.20
  // times eager: its wrapper pays the host what eager pays per layer (host_costs.py --compile) and more
  // per compiled graph, which the profiles' compiled_host prices.
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

TEST_CASE("accuracy: torch.compile's default mode against its eager twin on the same host, every pair dtsim prices as host-paced") {
  // validation/scripts/compile_eager_pairs.py. Where the host paces, a step's absolute error is
  // mostly the host's speed: one H200 VM issued the same compiled mobilenet_v2 step in 45.1 and then
  // 36.5 ms in one process (validation/data/h200-sxm/model_host_time). The eager twin measured minutes
  // apart in the same process cancels that speed. The worst pairs are mobilenet_v2 b32 (compiled 0.80
  // times eager) and densenet121 b32 (1.42 times).
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
  CHECK(ratio_errors[4] <= 0.07);  // the median; the overall target is 10%
}

TEST_CASE("accuracy: torch.compile's default mode and channels_last AdamW under the pytorch-ops profile (held out)") {
  // pytorch-ops's host runs ahead of the GPU (a step takes the longer of the host's issue time and
  // the GPU's timeline), its fixed host cost per step is measured (the chains' intercept, 1.12 ms) and
  // its convolutions' and batchnorms' host costs are measured at the models' sizes, per layout
  // (host_shape_factors.py). No step time entered any of them.
  ValidationOptions opt;
  opt.framework = "pytorch-ops";
  auto folder = [&](const std::string& rel) {
    std::vector<MeasuredRun> runs;
    for (const auto& f : measured_run_files({std::string(DTSIM_SOURCE_DIR) + "/" + rel})) runs.push_back(parse_measured_run(load_json_file(f), f));
    return validate_runs(runs, opt);
  };
  // Every default-mode compiled H200 run (compiled runs only: their eager twins are not in the set),
  // the fp32 ones of compile_fp32_default and the repeats of compile_repeat (four of
  // compile_no_graphs's configurations again on another H200 host) among them, each predicted before
  // it was measured. The target is 10% overall; the host-paced steps miss it (docs/accuracy.md, "What
  // is known to miss").
  std::vector<ValidationRow> compiled;
  // (the folders below)
  for (const char* f : {"compile_b16", "compile_no_graphs", "compile_b32", "host_paced", "compile_fp32_default", "compile_repeat"})
    for (const auto& r : folder(std::string("validation/data/h200-sxm/pytorch_modes/") + f))
      if (r.run.mode.execution == "compile") compiled.push_back(r);
  Stats s = abs_errors(compiled);
  INFO("compile default mode: runs " << s.n << ", median " << 100 * s.median << "%, max " << 100 * s.max << "%");
  CHECK(s.n == 25);
  CHECK(s.median <= 0.115);  // as reached; the overall target is 10%
  CHECK(s.max <= 0.36);     // mobilenet_v2 b32 compiled +35.2%
  std::vector<ValidationRow> paced;
  for (const auto& r : compiled)
    if (r.bottleneck != "host") paced.push_back(r);
  Stats p = abs_errors(paced);
  INFO("compile default mode where dtsim prices the GPU as the pace: runs " << p.n << ", median " << 100 * p.median << "%");
  CHECK(p.n == 7);
  CHECK(p.median <= 0.05);  // the target's 5% where the GPU paces; the worst is resnet18 b256
  std::vector<ValidationRow> adamw;
  for (const auto& r : folder("validation/data/h200-sxm/pytorch_modes/channels_last"))
    if (r.run.mode.optimizer == "adamw" && r.run.mode.memory_format == "channels_last") adamw.push_back(r);
  Stats a = abs_errors(adamw);
  INFO("channels_last AdamW: runs " << a.n << ", median " << 100 * a.median << "%, max " << 100 * a.max << "%");
  CHECK(a.n == 8);
  CHECK(a.median <= 0.06);  // the overall target is 10%
  CHECK(a.max <= 0.13);
  // What a replayed compiled module still costs the host (compiled_cuda_graphs_host, fitted on
  // model_host_time.py's batch-1 rows by replay_host_fit.py; no step time entered it), over every
  // compile-cuda-graphs run (H100 4, H200 23) and three b32 runs predicted before they were measured
  // (compile_graphs_held_out).
  std::vector<ValidationRow> graphs = folder("validation/data/h100-sxm/pytorch_modes/compile");
  for (const char* f : {"validation/data/h200-sxm/pytorch_modes/compile", "validation/data/h200-sxm/pytorch_modes/compile_fp32",
                        "validation/data/h200-sxm/pytorch_modes/compile_graphs_held_out"})
    for (const auto& r : folder(f)) graphs.push_back(r);
  graphs.erase(std::remove_if(graphs.begin(), graphs.end(), [](const ValidationRow& r) { return r.run.mode.execution != "compile-cuda-graphs"; }),
               graphs.end());
  Stats g = abs_errors(graphs);
  INFO("compile-cuda-graphs: runs " << g.n << ", median " << 100 * g.median << "%, mean " << 100 * g.mean << "%, max " << 100 * g.max << "%");
  CHECK(g.n == 30);
  CHECK(g.median <= 0.05);  // the overall target is 10%
  CHECK(g.mean <= 0.075);
  CHECK(g.max <= 0.33);     // googlenet b64 +32.2% (measured 15.3 ms, its batch-1 host 19.0 ms on another machine)
}

TEST_CASE("accuracy: torch.compile's default mode on the transformers, held out") {
  // One H200 (validation/data/h200-sxm/pytorch_transformers/compile), predicted before the call: the
  // first compiled transformer steps. Eager GPT-2's LM head (N = 50257) runs cuBLAS's align1 kernels,
  // and Inductor pads it (the profiles' compiled_shape_padding, sim/schedule.cpp pad_misaligned_gemms).
  // The contiguous inductor_* factors were fitted on gpt2_small b16 T = 1024's and vit_b_16's
  // torch.profiler lists, so those two are not held out from that fit.
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

TEST_CASE("accuracy: compiled transformers at GPU-paced sizes, predicted before measured") {
  // One H200 (validation/data/h200-sxm/pytorch_transformers/compile_held_out), measured after the
  // shape padding and the transformers' generated-kernel factors were priced: a held-out check of both.
  // What is left of BERT's miss: its MLM head's bwd_weight matmul (30522 x 768, K = rows), priced 0.95
  // ms where eager cuBLAS takes 3.1 ms at b32 on align2 kernels (the predictor is out of its range
  // there, in eager too), its sliced logits' copies (2.6 ms at b32, priced at the bandwidth, 0.4 ms)
  // and the loss.
  const auto rows = validate_folder("validation/data/h200-sxm/pytorch_transformers/compile_held_out");
  REQUIRE(rows.size() == 10);
  for (const auto& r : rows) {
    INFO(r.run.file << ": " << 100 * r.error << "%");
    if (r.run.mode.execution == "eager") CHECK(std::fabs(r.error) <= 0.07);
    else if (r.run.model == "gpt2_small") CHECK(std::fabs(r.error) <= 0.05);
    else CHECK(std::fabs(r.error) <= 0.16);  // bert_base, named above
  }
}
