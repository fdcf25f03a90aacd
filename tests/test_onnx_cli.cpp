// `--model FILE.onnx` through the real binary: what `models` prints, predict, and the exit codes and
// one-line messages of the error paths.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "study_cli.hpp"

#include "core/json_util.hpp"

using dtsim::Json;
namespace fs = std::filesystem;

namespace {

using study_test::Run;
const auto run_cli = [](const std::string& args) { return study_test::run_dtsim(args); };

std::string model(const std::string& name) { return std::string(DTSIM_TEST_DATA) + "/onnx/" + name + ".onnx"; }

using study_test::lines;

}  // namespace

TEST_CASE("cli onnx: models --model FILE.onnx prints what was understood") {
  auto r = run_cli("models --model " + model("resnet18"));
  REQUIRE(r.code == 0);
  CHECK(r.out.find("resnet18: 11689512 parameters, 1.81G MACs per sample forward, 70 layers") == 0);
  CHECK(r.out.find("/layer1/0/conv1/Conv") != std::string::npos);
  CHECK(r.err.empty());

  auto j = run_cli("models --format json --model " + model("efficientnet_b0"));
  REQUIRE(j.code == 0);
  Json doc = Json::parse(j.out);
  CHECK(doc["params"].get<int64_t>() == 5288548);
  CHECK(doc["notes"].empty());
  CHECK(doc["layer_list"].size() == doc["layers"].get<size_t>());
}

TEST_CASE("cli onnx: predict takes an ONNX model, with the batch from --batch-per-gpu") {
  auto r = run_cli("predict --model " + model("mobilenet_v2") + " --gpus 8 --batch-per-gpu 64 --format json");
  REQUIRE(r.code == 0);
  Json p = Json::parse(r.out);
  CHECK(p["iteration_s"].get<double>() > 0);
  // The export fixed its batch to 1: fine at batch 1, an error naming the file at batch 8.
  CHECK(run_cli("predict --model " + model("fixed_batch") + " --batch-per-gpu 1").code == 0);
  auto bad = run_cli("predict --model " + model("fixed_batch") + " --batch-per-gpu 8");
  CHECK(bad.code == 2);
  CHECK(lines(bad.err) == 1);
  CHECK(bad.err.find("fixed_batch.onnx") != std::string::npos);
}

TEST_CASE("cli onnx: an unknown operator exits 2 with one line: --allow-unknown-ops costs it and says so") {
  for (const char* cmd : {"models --model ", "predict --batch-per-gpu 32 --model "}) {
    INFO(cmd);
    auto r = run_cli(cmd + model("unknown_op"));
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find("dtsim: error: ") == 0);
    CHECK(r.err.find("node '/lrn/LRN' (LRN)") != std::string::npos);
    auto ok = run_cli(cmd + model("unknown_op") + " --allow-unknown-ops");
    CHECK(ok.code == 0);
    CHECK(lines(ok.err) == 1);
    CHECK(ok.err.find("dtsim: note: ") == 0);
    CHECK(ok.err.find("roofline") != std::string::npos);
  }
  auto t = run_cli("models --allow-unknown-ops --model " + model("unknown_op"));
  CHECK(t.out.find("eltwise:LRN (roofline)") != std::string::npos);
}

TEST_CASE("cli onnx: eval-mode exports are said so in one line on stderr: bad files exit 2") {
  auto r = run_cli("models --model " + model("eval_folded"));
  CHECK(r.code == 0);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find("eval-mode export") != std::string::npos);
  for (const char* f : {"not_onnx", "truncated", "dangling", "dynamic_hw", "zero_dim", "zero_stride", "custom_domain"}) {
    INFO(f);
    auto b = run_cli("models --model " + model(f));
    CHECK(b.code == 2);
    CHECK(lines(b.err) == 1);
    CHECK(b.err.find(std::string(f) + ".onnx") != std::string::npos);
  }
}

namespace {
std::string torch_export(const std::string& name) { return std::string(DTSIM_TEST_DATA) + "/onnx/torch_export/" + name + ".onnx"; }
}  // namespace

TEST_CASE("cli onnx: sweep imports an ONNX model at every batch size and agrees with the zoo") {
  auto r = run_cli("sweep --model resnet18," + torch_export("resnet18") + " --batch-per-gpu 32,128 --gpus 1,8 --format json");
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  Json rows = Json::parse(r.out);
  REQUIRE(rows.size() == 8);
  for (size_t i = 0; i < 4; ++i) {
    INFO(i);
    CHECK(rows[i + 4]["batch_per_gpu"] == rows[i]["batch_per_gpu"]);
    CHECK(rows[i + 4]["gpus"] == rows[i]["gpus"]);
    CHECK(rows[i + 4]["iteration_s"].get<double>() == Approx(rows[i]["iteration_s"].get<double>()).epsilon(0.01));
  }
  // The export fixed its batch to 1: a sweep over batches 1 and 8 is refused, naming the file.
  CHECK(run_cli("sweep --model " + model("fixed_batch") + " --batch-per-gpu 1 --gpus 1,2").code == 0);
  auto bad = run_cli("sweep --model " + model("fixed_batch") + " --batch-per-gpu 1,8 --gpus 1");
  CHECK(bad.code == 2);
  CHECK(lines(bad.err) == 1);
  CHECK(bad.err.find("fixed_batch.onnx") != std::string::npos);
  CHECK(bad.out.empty());
}

TEST_CASE("cli onnx: sweep and roofline take --allow-unknown-ops and print import notes once on stderr") {
  for (const char* cmd : {"sweep --batch-per-gpu 16,32 --gpus 1,2 --model ", "roofline --batch-per-gpu 16 --model "}) {
    INFO(cmd);
    auto r = run_cli(cmd + model("unknown_op"));
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find("node '/lrn/LRN' (LRN)") != std::string::npos);
    auto ok = run_cli(cmd + model("unknown_op") + " --allow-unknown-ops");
    CHECK(ok.code == 0);
    CHECK(lines(ok.err) == 1);  // once, though the sweep loads the model at two batch sizes
    CHECK(ok.err.find("dtsim: note: ") == 0);
    CHECK(ok.err.find("roofline") != std::string::npos);
    CHECK_FALSE(ok.out.empty());
    auto eval = run_cli(cmd + torch_export("resnet18_eval"));
    CHECK(eval.code == 0);
    CHECK(lines(eval.err) == 1);
    CHECK(eval.err.find("eval-mode export") != std::string::npos);
  }
  // roofline sets the batch from --batch-per-gpu: the fixed-batch export fails at 8, naming the file.
  CHECK(run_cli("roofline --batch-per-gpu 1 --model " + model("fixed_batch")).code == 0);
  auto bad = run_cli("roofline --batch-per-gpu 8 --model " + model("fixed_batch"));
  CHECK(bad.code == 2);
  CHECK(bad.err.find("fixed_batch.onnx") != std::string::npos);
  auto j = run_cli("roofline --batch-per-gpu 64 --format json --model " + torch_export("mobilenet_v2"));
  REQUIRE(j.code == 0);
  CHECK(j.err.empty());
  CHECK_FALSE(Json::parse(j.out)["kernels"].empty());
}

TEST_CASE("cli onnx: a sweep file may list ONNX models: --allow-unknown-ops goes with --sweep") {
  std::string path = (fs::temp_directory_path() / ("dtsim_onnx_sweep_" + std::to_string(::getpid()) + ".json")).string();
  {
    std::ofstream f(path);
    f << R"({"name": "onnx", "models": [")" << model("unknown_op") << R"("], "batch_per_gpu": [8, 16], "gpus": [1]})";
  }
  auto r = run_cli("sweep --sweep " + path);
  CHECK(r.code == 2);
  CHECK(r.err.find("LRN") != std::string::npos);
  auto ok = run_cli("sweep --sweep " + path + " --allow-unknown-ops --format json");
  CHECK(ok.code == 0);
  CHECK(lines(ok.err) == 1);
  if (ok.code == 0) CHECK(Json::parse(ok.out).size() == 2);
  fs::remove(path);
}
