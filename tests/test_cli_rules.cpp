// What a new user's inputs get from the CLI: time to train within its bounds and in whole steps, range
// messages that state the rule checked, flags that do not apply refused, --version and --out.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "study/study.hpp"
#include "study_cli.hpp"

using study_test::run_dtsim;

namespace {
const std::string kPredict = "predict --model resnet50 --batch-per-gpu 64 ";

// One line on stderr, exit 2, naming `flag`.
void refused(const study_test::Run& r, const std::string& flag) {
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK(study_test::lines(r.err) == 1);
  CHECK(r.err.find(flag) != std::string::npos);
  CHECK(r.out.empty());
}
}  // namespace

TEST_CASE("time to train refuses dataset sizes beyond 2^50 in predict and sweep as plan does") {
  refused(run_dtsim(kPredict + "--dataset-size 9223372036854775807 --epochs 1"), "--dataset-size");
  refused(run_dtsim("sweep --model resnet50 --batch-per-gpu 64 --gpus 1,8 --dataset-size 9223372036854775807 --epochs 1 --format csv"),
          "--dataset-size");
  const auto r = run_dtsim(kPredict + "--dataset-size 1125899906842625 --epochs 1");
  refused(r, "--dataset-size");
  // The printed range is the rule: 2^50 itself is taken.
  CHECK(r.err.find("[1, 1125899906842624]") != std::string::npos);
  const auto ok = run_dtsim(kPredict + "--dataset-size 1125899906842624 --epochs 1 --format json");
  REQUIRE(ok.code == 0);
  CHECK(ok.out.find("\"time_s\": -") == std::string::npos);
}

TEST_CASE("time to train counts whole steps, at least one") {
  dtsim::TrainGoal g;
  g.dataset_size = 1000;
  g.epochs = 1e-9;
  auto e = dtsim::train_estimate(1, 64, 0.04, g);
  CHECK(e.steps == 1);  // ceil(16 x 1e-9): one step runs
  CHECK(e.time_s == Approx(0.04));
  g.epochs = 0.5;
  e = dtsim::train_estimate(1, 64, 0.04, g);  // 16 steps an epoch: 8 steps
  CHECK(e.steps == 8);
  g.dataset_size = 1281167;
  g.epochs = 90;
  e = dtsim::train_estimate(256, 1, 1.0, g);  // 5005 steps an epoch
  CHECK(e.steps == 450450);
  g.epochs = 0.3;
  e = dtsim::train_estimate(256, 1, 1.0, g);  // 1501.5 steps: the last one runs
  CHECK(e.steps == 1502);
  const auto r = run_dtsim(kPredict + "--dataset-size 1000 --epochs 1e-9");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("Training 1 steps") != std::string::npos);
  CHECK(r.out.find("Training 0 steps") == std::string::npos);
}

TEST_CASE("dataset size takes 1e6 as epochs does, and refuses a fraction") {
  const auto a = run_dtsim(kPredict + "--dataset-size 1e6 --epochs 1 --format json");
  const auto b = run_dtsim(kPredict + "--dataset-size 1000000 --epochs 1 --format json");
  REQUIRE(a.code == 0);
  CHECK(a.out == b.out);
  refused(run_dtsim(kPredict + "--dataset-size 1.5 --epochs 1"), "--dataset-size");
  const auto plan = run_dtsim("plan --model resnet50 --dataset-size 1.2e6 --epochs 1 --gpus 8 --batch-per-gpu 64 --cluster h100-sxm --format csv");
  INFO(plan.err);
  CHECK(plan.code == 0);
}

TEST_CASE("what-if range messages print the rule they check, whatever the value") {
  const auto zero = run_dtsim(kPredict + "--nic-Gbps 0");
  const auto negative = run_dtsim(kPredict + "--nic-Gbps -100");
  refused(zero, "--nic-Gbps");
  refused(negative, "--nic-Gbps");
  const auto range = [](const std::string& err) { return err.substr(err.find('['), err.find(']') - err.find('[') + 1); };
  CHECK(range(zero.err) == range(negative.err));
}

TEST_CASE("a range step out of bounds is named as the step") {
  const auto r = run_dtsim("sweep --model resnet50 --batch-per-gpu 64 --gpus 1..8:x1");
  refused(r, "--gpus");
  CHECK(r.err.find("step 'x1'") != std::string::npos);
}

TEST_CASE("train-predictors on a folder without measurements says so") {
  study_test::TempDir d("emptydata");
  const auto r = run_dtsim("train-predictors --data " + d.path + " --out " + d.path + "/out");
  refused(r, "--data");
  CHECK(r.err.find("no measurement CSVs") != std::string::npos);
  CHECK(r.err.find("unknown GPU") == std::string::npos);
}

TEST_CASE("the version flag names the version") {
  const auto r = run_dtsim("--version");
  CHECK(r.code == 0);
  CHECK(r.out.rfind("dtsim ", 0) == 0);
}

TEST_CASE("kernel and models write --out, and kernel takes --precision") {
  study_test::TempDir d("outflags");
  const std::string k = "kernel --gpu h100-sxm --kind gemm --pass fwd --shape M=1024,N=1024,K=1024 ";
  const auto shown = run_dtsim(k + "--precision bf16");
  REQUIRE(shown.code == 0);
  CHECK(shown.out == run_dtsim(k + "--dtype bf16").out);
  CHECK(shown.out != run_dtsim(k).out);
  const auto written = run_dtsim(k + "--precision bf16 --out " + d.path + "/k.txt");
  CHECK(written.code == 0);
  CHECK(written.out.empty());
  CHECK(study_test::slurp(d.path + "/k.txt") == shown.out);
  const auto models = run_dtsim("models");
  REQUIRE(models.code == 0);
  CHECK(run_dtsim("models --out " + d.path + "/m.txt").out.empty());
  CHECK(study_test::slurp(d.path + "/m.txt") == models.out);
}

TEST_CASE("strategies table starts every summary in one column") {
  const auto r = run_dtsim("strategies");
  REQUIRE(r.code == 0);
  size_t column = std::string::npos;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Defaults:", 0) == 0) break;
    const size_t c = line.find_first_not_of(' ', line.find(' '));
    if (column == std::string::npos) column = c;
    CHECK(c == column);
  }
}

TEST_CASE("flags a command does not read are refused") {
  for (const char* f : {"--nic-Gbps 1", "--latency-scale 100", "--gpus-per-node 2", "--intra-node-GBps 10", "--launch-overhead-scale 2"})
    refused(run_dtsim(std::string("roofline --model resnet50 --batch-per-gpu 8 ") + f), std::string(f).substr(0, std::string(f).find(' ')));
  CHECK(run_dtsim("roofline --model resnet50 --batch-per-gpu 8 --flops-scale 2").code == 0);
  for (const char* s : {"ps", "easgd-async", "easgd-sync"}) refused(run_dtsim(kPredict + "--gpus 16 --strategy " + s + " --algo ring"), "--algo");
  for (const char* s : {"easgd-sync", "easgd-async", "local-sgd", "grid"})
    refused(run_dtsim(kPredict + "--gpus 16 --strategy " + s + " --no-overlap"), "--no-overlap");
  refused(run_dtsim("sweep --model resnet50 --batch-per-gpu 64 --gpus 16 --strategy ps --algo tree"), "--algo");
  // Where they are read they change the answer.
  CHECK(run_dtsim(kPredict + "--gpus 16 --strategy ps --no-overlap --format json").out != run_dtsim(kPredict + "--gpus 16 --strategy ps --format json").out);
  CHECK(run_dtsim(kPredict + "--gpus 16 --strategy dp --algo tree --format json").out != run_dtsim(kPredict + "--gpus 16 --strategy dp --algo ring --format json").out);
}

TEST_CASE("fp16 prices convolutions, matmuls and a transformer's kernels as bf16 does") {
  for (const std::string k : {"kernel --gpu h100-sxm --kind conv2d --pass fwd --shape N=32,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1",
                              "kernel --gpu h100-sxm --kind gemm --pass fwd --shape M=4096,N=1024,K=1024"}) {
    auto time_of = [&](const char* p) {
      const auto r = run_dtsim(k + " --format json --precision " + p);
      REQUIRE(r.code == 0);
      return r.out.substr(r.out.find("\"time_s\""), 40);
    };
    CHECK(time_of("fp16") == time_of("bf16"));
  }
  // gpt2_small has no batchnorm: the kernels' time is the same, GradScaler's work aside (its unscale
  // in the optimizer's time; the loss scaling, a few microseconds, in the kernels': 3 us of 40 ms).
  auto kernels_s = [](const char* p) {
    const auto r = run_dtsim(std::string("predict --model gpt2_small --batch-per-gpu 8 --format json --precision ") + p);
    REQUIRE(r.code == 0);
    auto num = [&](const std::string& key) { return std::stod(r.out.substr(r.out.find("\"" + key + "\": ") + key.size() + 4)); };
    return num("compute_s") - num("optimizer_s");
  };
  CHECK(kernels_s("fp16") == Approx(kernels_s("bf16")).epsilon(2e-4));
  // Batchnorm is the one kernel they differ in: PyTorch runs bf16's on its own kernels, fp16's on cuDNN's.
  const std::string bn = "kernel --gpu h100-sxm --kind batchnorm --pass fwd --shape N=64,C=64,H=112,W=112 --framework pytorch --format json --precision ";
  CHECK(run_dtsim(bn + "fp16").out != run_dtsim(bn + "bf16").out);
}

TEST_CASE("kernel: a foreach optimizer update reports the bytes its time streams") {
  const int64_t params = 25557032;
  const auto r = run_dtsim("kernel --gpu h100-sxm --kind adam_update --pass update --shape params=" + std::to_string(params) +
                           " --framework pytorch --format json");
  REQUIRE(r.code == 0);
  auto num = [&](const std::string& key) { return std::stod(r.out.substr(r.out.find("\"" + key + "\": ") + key.size() + 4)); };
  const double bytes = num("bytes"), time_s = num("time_s");
  INFO(r.out);
  // PyTorch's foreach AdamW passes move far more than the fused kernel's 28 bytes a parameter, and
  // the time cannot stream them faster than the GPU's memory (3.35 TB/s on an H100 SXM).
  CHECK(bytes / params > 60);
  CHECK(bytes / time_s < 3.35e12);
  CHECK(bytes / time_s > 0.5 * 3.35e12);
  // Without a framework the fused kernel's bytes remain.
  const auto fused = run_dtsim("kernel --gpu h100-sxm --kind adam_update --pass update --shape params=" + std::to_string(params) + " --format json");
  CHECK(fused.out.find("\"bytes\": " + std::to_string(28 * params)) != std::string::npos);
}

TEST_CASE("roofline names its compute model and prices with the measured predictors by default") {
  const auto measured = run_dtsim("roofline --model resnet50 --batch-per-gpu 64");
  const auto pure = run_dtsim("roofline --model resnet50 --batch-per-gpu 64 --compute-model roofline");
  REQUIRE(pure.code == 0);
  REQUIRE(measured.code == 0);
  CHECK(pure.out.find("compute model roofline") != std::string::npos);
  CHECK(measured.out.find("compute model mlp") != std::string::npos);
  // "...: 512 kernels, 38.213 ms of GPU time per iteration": no kernel beats its roof, so the
  // measured total is the larger.
  auto gpu_ms = [](const std::string& out) {
    const size_t at = out.find(" ms of GPU time");
    REQUIRE(at != std::string::npos);
    return std::stod(out.substr(out.rfind(' ', at - 1) + 1));
  };
  CHECK(gpu_ms(measured.out) > gpu_ms(pure.out));
  refused(run_dtsim("roofline --model resnet50 --batch-per-gpu 64 --compute-model nope"), "--compute-model");
}

TEST_CASE("plan plot names the cost's currency and colours the front by cluster") {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    WARN("gnuplot is not installed: plot not drawn");
    return;
  }
  study_test::TempDir d("planplot");
  const auto r = run_dtsim("plan --model resnet50 --dataset-size 1281167 --epochs 90 --cluster h100-sxm,a100-sxm --gpus 8..256:x2 "
                           "--batch-per-gpu 64,128 --plot " + d.path + "/p.svg");
  REQUIRE(r.code == 0);
  const std::string svg = study_test::slurp(d.path + "/p.svg");
  CHECK(svg.find("currency") != std::string::npos);
  // Both clusters are on the front here (the fastest on h100-sxm, the cheapest on a100-sxm): a legend entry each.
  CHECK(svg.find(">h100-sxm<") != std::string::npos);
  CHECK(svg.find(">a100-sxm<") != std::string::npos);
}
