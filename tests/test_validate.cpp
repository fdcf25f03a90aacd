// dtsim validate (study/validate.hpp) and the framework profiles (sim/framework.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "study_cli.hpp"

#include "core/error.hpp"
#include "sim/framework.hpp"
#include "workload/kernels.hpp"
#include "workload/model_json.hpp"
#include "sim/predict.hpp"
#include "study/validate.hpp"
#include "compute/compute_model.hpp"

using namespace dtsim;
namespace fs = std::filesystem;

namespace {

// A measured run of the tiny test model, as the harness would write it (only the fields read).
Json synthetic_run() {
  return Json::parse(R"J({
    "schema": "dtsim-measured-run/1", "source": "dtsim-harness", "framework": "harness",
    "model": ")J" + std::string(DTSIM_TEST_DATA) + R"J(/tiny.json",
    "gpus": 1, "batch_per_gpu": 8, "precision": "fp32",
    "ddp": {"overlap": true, "bucket_bytes": 26214400, "first_bucket_bytes": 1048576},
    "iteration_time_s": {"median": 0.001, "p10": 0.0009, "p90": 0.0011},
    "provenance": {"gpu": {"name": "NVIDIA H200", "short_name": "h200-sxm"}, "software": {"driver": "580", "cudnn": "9.19.0"}},
    "layers": [{"name": "conv1", "pass": "fwd", "time_s": 1e-5}, {"name": "conv1", "pass": "bwd_data", "time_s": 1e-5},
               {"name": "conv1", "pass": "bwd_filter", "time_s": 1e-5}, {"name": "(iteration)", "pass": "update", "time_s": 1e-5}]
  })J");
}

using CliResult = study_test::Run;
const auto dtsim_cli = [](const std::string& args) { return study_test::run_dtsim(args); };

const std::string kRuns = std::string(DTSIM_SOURCE_DIR) + "/validation/data/h200-sxm";

}  // namespace

TEST_CASE("framework profiles: the shipped files parse, with measured host costs") {
  auto names = framework_presets();
  REQUIRE(std::find(names.begin(), names.end(), "harness") != names.end());
  REQUIRE(std::find(names.begin(), names.end(), "pytorch") != names.end());
  FrameworkProfile h = load_framework("harness"), p = load_framework("pytorch");
  CHECK(h.name == "harness");
  CHECK(p.name == "pytorch");
  // Eager PyTorch issues kernels more slowly than a C++ loop.
  CHECK(p.launch_overhead_s > h.launch_overhead_s);
  ClusterSpec c = apply_framework(load_cluster("h200-sxm"), p);
  CHECK(c.framework.launch_overhead_s == p.launch_overhead_s);
  CHECK(c.framework.iteration_overhead_s == p.iteration_overhead_s);
  CHECK(c.framework.bucket_bytes == 25 << 20);  // buckets stay the cluster's
  CHECK_THROWS_AS(load_framework("tensorflow"), InputError);
  CHECK_THROWS_WITH(parse_framework(Json::parse(R"({"name":"x","launch_overhead_s":-1,"iteration_overhead_s":0})"), "f.json"),
                    Catch::Contains("$.launch_overhead_s"));
  CHECK_THROWS_WITH(parse_framework(Json::parse(R"({"name":"x","launch_overhead_s":0,"iteration_overhead_s":0,"lauch":1})"), "f.json"),
                    Catch::Contains("lauch"));
  // The per-kernel tables: a ratio must be positive, a host cost may be zero; keys need kind/pass.
  const std::string head = R"({"name":"x","launch_overhead_s":0,"iteration_overhead_s":0,)";
  CHECK_THROWS_WITH(parse_framework(Json::parse(head + R"("kernel_time_factors":{"conv2d/fwd/fp32":0}})"), "f.json"),
                    Catch::Contains("$.kernel_time_factors.conv2d/fwd/fp32") && Catch::Contains("(0, 100]"));
  CHECK_THROWS_WITH(parse_framework(Json::parse(head + R"("kernel_time_factors":{"conv2d/fwd":1.5}})"), "f.json"),
                    Catch::Contains("kind/pass/math"));
  CHECK_THROWS_WITH(parse_framework(Json::parse(head + R"("host_cost_s":{"conv2d/fwd":2}})"), "f.json"),
                    Catch::Contains("$.host_cost_s.conv2d/fwd") && Catch::Contains("[0, 1]"));
  CHECK_THROWS_WITH(parse_framework(Json::parse(head + R"("host_cost_s":{"conv2d":1e-5}})"), "f.json"),
                    Catch::Contains("kind/pass"));
  CHECK_THROWS_WITH(parse_framework(Json::parse(head + R"("host_cost_s":[1]})"), "f.json"),
                    Catch::Contains("must be an object"));
  FrameworkProfile ok = parse_framework(
      Json::parse(head + R"("kernel_time_factors":{"conv2d/fwd/bf16":1.5},"host_cost_s":{"conv2d/fwd":0}})"), "f.json");
  CHECK(ok.kernel_time_factors.at("conv2d/fwd/bf16") == 1.5);
  CHECK(ok.host_cost_s.at("conv2d/fwd") == 0);
}

TEST_CASE("framework profiles: a kernel takes its most specific time factor") {
  // A pooling window and an elementwise kernel's variant have keys of their own (PyTorch's native
  // pooling is 0.8x to 4x cuDNN's depending on the window: configs/frameworks/pytorch.json);
  // a kernel without one takes its kind/pass/math key, and one without either is unscaled.
  ClusterSpec c = load_cluster("h100-sxm");
  c.framework.kernel_time_factors = {{"pool/bwd/bf16/max", 3.0}, {"pool/bwd/bf16/max/k2s2p0", 2.0},
                                     {"eltwise/fwd/bf16/bias_add", 5.0}};
  auto plain = cluster_compute_model("roofline", load_cluster("h100-sxm"));
  auto scaled = cluster_compute_model("roofline", c);
  auto ratio = [&](KernelDesc k) {
    set_cost(k);
    return scaled->time(k).seconds / plain->time(k).seconds;
  };
  auto pool = [](int64_t r, int64_t stride, int64_t pad) {
    const int64_t out = (56 + 2 * pad - r) / stride + 1;
    return KernelDesc{KernelKind::Pool, Pass::Bwd, MathMode::BF16, 0, {32, 64, 56, 56, r, r, stride, pad, out, out}, "max", 0, 0};
  };
  CHECK(ratio(pool(2, 2, 0)) == Approx(2.0));
  CHECK(ratio(pool(3, 2, 1)) == Approx(3.0));
  KernelDesc fp32 = pool(2, 2, 0);
  fp32.math = MathMode::FP32;
  CHECK(ratio(fp32) == Approx(1.0));
  CHECK(ratio(KernelDesc{KernelKind::Eltwise, Pass::Fwd, MathMode::BF16, 0, {1 << 20, 1 << 20}, "bias_add", 0, 0}) == Approx(5.0));
  CHECK(ratio(KernelDesc{KernelKind::Eltwise, Pass::Fwd, MathMode::BF16, 0, {1 << 20, 1 << 20}, "mul", 0, 0}) == Approx(1.0));
}

TEST_CASE("dtsim kernel prices an elementwise kernel as the lowering issues it") {
  // framework_kernel_factors.py --op-times divides PyTorch's bias-add times by these predictions.
  auto r = study_test::run_dtsim(
      "kernel --gpu h100-sxm --kind eltwise --pass fwd --dtype bf16 --shape read=1000064,written=1000000 --variant bias_add --format json");
  REQUIRE(r.code == 0);
  Json j = Json::parse(r.out);
  CHECK(j["bytes"].get<double>() == Approx(2.0 * (1000064 + 1000000)));  // bf16: two bytes an element
  CHECK(j["source"] == "roofline");
  KernelDesc k{KernelKind::Eltwise, Pass::Fwd, MathMode::BF16, 0, {1000064, 1000000}, "bias_add", 0, 0};
  set_cost(k);
  CHECK(j["time_s"].get<double>() == Approx(make_compute_model("roofline", load_gpu("h100-sxm"))->time(k).seconds));
  auto bad = study_test::run_dtsim("kernel --gpu h100-sxm --kind eltwise --pass fwd --shape read=10");
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--shape") != std::string::npos);
  CHECK(bad.err.find("written") != std::string::npos);
}

TEST_CASE("validate: a synthetic run is predicted in its configuration") {
  MeasuredRun r = parse_measured_run(synthetic_run(), "tiny_run.json");
  CHECK(r.cluster == "h200-sxm");
  CHECK(r.iteration_s == 0.001);
  REQUIRE(r.layers.size() == 1);  // conv1; the update pass is no layer
  CHECK(r.layers[0].fwd_s == Approx(1e-5));
  CHECK(r.layers[0].bwd_s == Approx(2e-5));
  ValidationRow row = validate_run(r, {});
  CHECK(row.framework_profile == "harness");
  CHECK(row.predicted_s > 0);
  CHECK(row.error == Approx((row.predicted_s - 0.001) / 0.001));
  REQUIRE(row.layers.size() == 1);  // only layers the model has
  CHECK(row.layers[0].name == "conv1");

  // The summary: mean, median and max of the absolute errors.
  ValidationRow a = row, b = row, c = row;
  a.error = 0.1, b.error = -0.3, c.error = 0.2;
  auto s = summarize({a, b, c});
  REQUIRE(s.size() == 2);  // all, harness
  CHECK(s[0].group == "all");
  CHECK(s[0].mean_abs == Approx(0.2));
  CHECK(s[0].median_abs == Approx(0.2));
  CHECK(s[0].max_abs == Approx(0.3));

  // Another profile changes the host costs only.
  ValidationOptions opt;
  opt.framework = "pytorch";
  CHECK(validate_run(r, opt).framework_profile == "pytorch");
}

TEST_CASE("validate: bad measured runs name the file, the JSON path and the rule") {
  auto bad = [](const std::function<void(Json&)>& edit, const std::string& must_mention) {
    Json j = synthetic_run();
    edit(j);
    INFO(must_mention);
    CHECK_THROWS_WITH(parse_measured_run(j, "bad.json"), Catch::Contains("bad.json") && Catch::Contains(must_mention));
  };
  bad([](Json& j) { j["schema"] = "other/2"; }, "$.schema");
  bad([](Json& j) { j["iteration_time_s"].erase("median"); }, "$.iteration_time_s.median");
  bad([](Json& j) { j["iteration_time_s"]["median"] = -1; }, "$.iteration_time_s.median");
  bad([](Json& j) { j["gpus"] = 0; }, "$.gpus");
  bad([](Json& j) { j["precision"] = "fp8"; }, "$.precision");
  bad([](Json& j) { j["framework"] = "jax"; }, "$.framework");
  bad([](Json& j) { j["provenance"]["gpu"] = {{"name", "Radeon"}}; }, "$.provenance.gpu.name");
  bad([](Json& j) { j["layers"][1]["time_s"] = "fast"; }, "$.layers[1].time_s");
  CHECK_THROWS_AS(measured_run_files({"/nonexistent/dtsim"}), InputError);
}

TEST_CASE("validate: hierarchical and local-sgd runs are predicted with the matching strategy") {
  // The harness's other schemes (validation/harness/train.cu): a "strategy" object names them.
  auto with_strategy = [](const Json& st) {
    Json j = synthetic_run();
    j["gpus"] = 4;
    j["strategy"] = st;
    return j;
  };
  // What validate_run should do, written out: the run's cluster and framework, the strategy.
  auto expected = [](const ClusterSpec& cluster, const std::string& strategy, int tau) {
    ClusterSpec c = apply_framework(cluster, load_framework("harness"));
    c.framework.first_bucket_bytes = 1048576;
    c.framework.bucket_bytes = 26214400;
    TrainingConfig cfg;
    cfg.gpus = 4;
    cfg.batch_per_gpu = 8;
    cfg.overlap = true;
    cfg.strategy = strategy;
    cfg.strategy_params.tau = tau;
    return predict(load_model(std::string(DTSIM_TEST_DATA) + "/tiny.json"), c, cfg).iteration_s;
  };
  const ClusterSpec h200 = load_cluster("h200-sxm");

  MeasuredRun h = parse_measured_run(with_strategy({{"name", "hierarchical"}, {"allreduce", "hierarchical"}, {"group_size", 2}, {"groups", 2},
                                                    {"description", "..."}, {"step_time_s", {{"all_steps", {{"median", 0.001}}}}}}),
                                     "tiny_4gpu_fp32_hier2.json");
  CHECK(h.scheme == "hierarchical");
  CHECK(h.group_size == 2);
  CHECK(h.iteration_s == 0.001);  // the all-steps median: every step is alike
  ValidationRow hr = validate_run(h, {});
  CHECK(hr.strategy == "hierarchical");
  CHECK(hr.predicted_s == Approx(expected(split_node_cluster(h200, 2), "hierarchical", 0)).epsilon(1e-12));

  MeasuredRun hl = parse_measured_run(with_strategy({{"name", "hierarchical-leader"}, {"group_size", 2}}), "leader.json");
  CHECK(validate_run(hl, {}).predicted_s == Approx(expected(split_node_cluster(h200, 2), "hierarchical-leader", 0)).epsilon(1e-12));

  Json local = with_strategy({{"name", "local-sgd"},
                              {"average_every", 4},
                              {"step_time_s", {{"averaging_steps", {{"steps", 2}}}, {"local_steps", {{"steps", 6}}}, {"period_mean_s", 0.0012}}},
                              {"params_identical_before_final_average", false}});
  MeasuredRun l = parse_measured_run(local, "tiny_4gpu_fp32_avg4.json");
  CHECK(l.scheme == "local-sgd");
  CHECK(l.average_every == 4);
  CHECK(l.iteration_s == 0.0012);  // the period's mean step, not the all-steps median
  ValidationRow lr = validate_run(l, {});
  CHECK(lr.strategy == "local-sgd");
  CHECK(lr.predicted_s == Approx(expected(h200, "local-sgd", 4)).epsilon(1e-12));
  CHECK(lr.error == Approx((lr.predicted_s - 0.0012) / 0.0012));
  CHECK(validation_csv({hr, lr}).find("local-sgd/4") != std::string::npos);
  CHECK(validation_json({hr, lr})["runs"][1]["tau"] == 4);

  // No strategy object, or "dp": the plain prediction.
  CHECK(validate_run(parse_measured_run(synthetic_run(), "a.json"), {}).strategy == "dp");

  // Unknown or inconsistent schemes are errors naming the path, never a silent dp prediction.
  auto bad = [&](const Json& st, const std::string& must_mention) {
    INFO(must_mention);
    CHECK_THROWS_WITH(parse_measured_run(with_strategy(st), "bad.json"), Catch::Contains("bad.json") && Catch::Contains(must_mention));
  };
  bad({{"name", "gossip"}}, "$.strategy.name");
  bad({{"name", "hierarchical"}, {"group_size", 3}}, "$.strategy.group_size");
  bad({{"name", "hierarchical"}}, "$.strategy.group_size");
  bad({{"name", "local-sgd"}, {"average_every", 0}, {"step_time_s", {{"period_mean_s", 0.001}}}}, "$.strategy.average_every");
  bad({{"name", "local-sgd"}, {"average_every", 4}, {"step_time_s", {{"median", 0.001}}}}, "$.strategy.step_time_s.period_mean_s");
  bad({{"name", "local-sgd"}, {"average_every", 4}, {"tau", 4}, {"step_time_s", {{"period_mean_s", 0.001}}}}, "$.strategy.tau");
}

TEST_CASE("validate: the split cluster of a hierarchical run is configs/clusters/h100-sxm-2x2.json") {
  const ClusterSpec file = load_cluster("h100-sxm-2x2");
  const ClusterSpec made = split_node_cluster(load_cluster("h100-sxm"), 2);
  CHECK(made.gpus_per_node == file.gpus_per_node);
  CHECK(made.gpu.name == file.gpu.name);
  CHECK(made.intra.bandwidth_Bps == Approx(file.intra.bandwidth_Bps));
  CHECK(made.intra.latency_s == file.intra.latency_s);
  CHECK(made.inter.nics_per_node == file.inter.nics_per_node);
  CHECK(made.inter.nic_bandwidth_Bps == Approx(file.inter.nic_bandwidth_Bps));
  CHECK(made.inter.latency_s == file.inter.latency_s);
  CHECK(made.inter.oversubscription == file.inter.oversubscription);
  CHECK(made.collectives.base_latency_s == file.collectives.base_latency_s);
  // The same prediction for a hierarchical 4-GPU job.
  TrainingConfig cfg;
  cfg.gpus = 4;
  cfg.batch_per_gpu = 32;
  cfg.strategy = "hierarchical";
  const Graph g = load_model("resnet50");
  CHECK(predict(g, made, cfg).iteration_s == Approx(predict(g, file, cfg).iteration_s).epsilon(1e-12));
  // The "network" is the NVLink itself: nothing slower than inside the node.
  CHECK(made.inter.node_bandwidth_Bps() / made.gpus_per_node == Approx(made.intra.bandwidth_Bps));
  CHECK_THROWS_AS(split_node_cluster(load_cluster("h100-sxm"), 3), InputError);
  // Groups as large as the node are the nodes: the cluster's own network stays (emulated nodes of 2
  // GPUs with sockets between them, validation/data/h200-sxm/emulated/gpu4_large/s2x2n2).
  ClusterSpec pairs = load_cluster("h100-sxm");
  pairs.gpus_per_node = 2;
  const ClusterSpec same = split_node_cluster(pairs, 2);
  CHECK(same.name == pairs.name);
  CHECK(same.gpus_per_node == 2);
  CHECK(same.inter.nic_bandwidth_Bps == pairs.inter.nic_bandwidth_Bps);
  CHECK(same.inter.latency_s == pairs.inter.latency_s);
}

TEST_CASE("cli: validate a committed run, the summary last, exit 0") {
  const std::string run = kRuns + "/runs/alexnet_b16_1gpu_fp32.json";
  auto r = dtsim_cli("validate --measured " + run);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("alexnet_b16_1gpu_fp32") != std::string::npos);
  auto summary = r.out.rfind("Summary");
  REQUIRE(summary != std::string::npos);
  CHECK(r.out.find("alexnet_b16_1gpu_fp32", summary) != std::string::npos);  // the worst run, in the summary
  auto j = dtsim_cli("validate --format json --measured " + run + " --measured " + kRuns + "/pytorch/alexnet_b16_1gpu_fp32.json");
  REQUIRE(j.code == 0);
  Json doc = Json::parse(j.out);
  REQUIRE(doc["runs"].size() == 2);
  CHECK(doc["runs"][0]["framework_profile"] == "harness");
  CHECK(doc["runs"][1]["framework_profile"] == kDefaultFrameworkProfile);
  CHECK(doc["runs"][0]["layers"].size() > 0);  // the harness profiles layers
  CHECK(doc["summary"][0]["runs"] == 2);
  auto csv = dtsim_cli("validate --format csv --measured " + run);
  CHECK(csv.code == 0);
  CHECK(csv.out.rfind("run,framework,model", 0) == 0);
}

TEST_CASE("cli: validate error paths exit 2 with one line") {
  std::string tmp = (fs::temp_directory_path() / ("dtsim_valbad_" + std::to_string(::getpid()))).string();
  fs::create_directories(tmp);
  Json j = synthetic_run();
  j["iteration_time_s"]["median"] = "slow";
  std::ofstream(tmp + "/bad_run.json") << j.dump();
  std::ofstream(tmp + "/broken.json") << "{\"schema\": ";
  Json u = synthetic_run();
  u["strategy"] = {{"name", "gossip"}};
  std::ofstream(tmp + "/unknown_scheme.json") << u.dump();
  struct Case {
    std::string args, must_mention;
  };
  const Case cases[] = {
      {"validate", "--measured"},
      {"validate --measured /nonexistent/x.json", "/nonexistent/x.json"},
      {"validate --measured " + tmp + "/bad_run.json", "$.iteration_time_s.median"},
      {"validate --measured " + tmp + "/broken.json", tmp + "/broken.json"},
      {"validate --measured " + kRuns + "/runs/alexnet_b16_1gpu_fp32.json --framework tensorflow", "--framework"},
      {"validate --measured " + kRuns + "/runs --format xml", "--format"},
      {"predict --model resnet50 --batch-per-gpu 8 --framework jax", "--framework"},
      {"validate --measured " + tmp + "/unknown_scheme.json", "$.strategy.name"},
  };
  for (const auto& c : cases) {
    INFO(c.args);
    auto r = dtsim_cli(c.args);
    CHECK(r.code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find(c.must_mention) != std::string::npos);
  }
  fs::remove_all(tmp);
}

TEST_CASE("validate: fresh-process repeat runs with their host probe (ddp_reference.py --host-probe) parse") {
  // validation/data/h100-sxm/pytorch_repeats: the same configuration in three processes on one machine;
  // host_probe_us says how fast that process's host was. Each round folder holds a full set of runs.
  const std::string dir = std::string(DTSIM_SOURCE_DIR) + "/validation/data/h100-sxm/pytorch_repeats/round2";
  auto j = dtsim_cli("validate --format json --measured " + dir);
  REQUIRE(j.code == 0);
  Json doc = Json::parse(j.out);
  CHECK(doc["runs"].size() == 23);
  for (const auto& r : doc["runs"]) CHECK(r["framework_profile"] == kDefaultFrameworkProfile);
  // the probe is accepted by name only: another unknown top-level field is still refused
  std::string tmp = (fs::temp_directory_path() / ("dtsim_probe_" + std::to_string(::getpid()) + ".json")).string();
  Json run = dtsim::load_json_file(dir + "/resnet50_b16_1gpu_fp32.json");
  REQUIRE(run.contains("host_probe_us"));
  run["host_probe"] = run["host_probe_us"];
  { std::ofstream(tmp) << run.dump(); }
  auto bad = dtsim_cli("validate --measured " + tmp);
  CHECK(bad.code == 2);
  CHECK(bad.err.find("host_probe: unknown field") != std::string::npos);
  fs::remove(tmp);
}

namespace {

// A PyTorch run of gpt2_small on one H100 with AdamW, as ddp_reference.py would write it (fields read only).
Json language_model_run() {
  return Json::parse(R"J({
    "schema": "dtsim-measured-run/1", "source": "pytorch-ddp", "framework": "pytorch", "model": "gpt2_small",
    "gpus": 1, "batch_per_gpu": 16, "precision": "bf16", "sequence_length": 256,
    "ddp": {"overlap": true, "bucket_bytes": 26214400, "first_bucket_bytes": 1048576},
    "iteration_time_s": {"median": 0.05},
    "execution": {"memory_format": "contiguous", "optimizer": "adamw", "execution": "eager"},
    "provenance": {"gpu": {"name": "NVIDIA H100 80GB HBM3"}}
  })J");
}

}  // namespace

TEST_CASE("validate: a language model run's sequence_length is predicted as --seq-len is") {
  study_test::TempDir tmp("val_seq");
  const Json run = language_model_run();
  const MeasuredRun r = parse_measured_run(run, "gpt2_run.json");
  CHECK(r.sequence_length == 256);
  CHECK(r.mode.optimizer == "adamw");
  // The prediction is dtsim predict's with the same flags, --seq-len and --optimizer adamw included.
  const std::string file = tmp.file("gpt2_run.json", run.dump());
  auto v = dtsim_cli("validate --format json --measured " + file);
  REQUIRE(v.code == 0);
  auto p = dtsim_cli("predict --model gpt2_small --gpus 1 --batch-per-gpu 16 --precision bf16 --optimizer adamw --seq-len 256 "
                     "--cluster h100-sxm --format json");
  REQUIRE(p.code == 0);
  const Json vj = Json::parse(v.out), pj = Json::parse(p.out);
  REQUIRE(pj["sequence_length"] == 256);
  const Json& row = vj["runs"][0];
  CHECK(row["predicted_s"].get<double>() == Approx(pj["iteration_s"].get<double>()).epsilon(1e-12));
  CHECK(row["sequence_length"] == 256);
  CHECK(row["optimizer"] == "adamw");
  // The model's own context (1024 tokens) would be another prediction (at batch 16 the GPU, not the
  // host, bounds the step).
  auto p1024 = dtsim_cli("predict --model gpt2_small --gpus 1 --batch-per-gpu 16 --precision bf16 --optimizer adamw "
                         "--cluster h100-sxm --framework pytorch --format json");
  REQUIRE(p1024.code == 0);
  CHECK(Json::parse(p1024.out)["iteration_s"].get<double>() > 1.5 * row["predicted_s"].get<double>());
  // CSV: a sequence_length column where a run has one, empty for runs without.
  const std::string image = tmp.file("image_run.json", synthetic_run().dump());
  auto csv = dtsim_cli("validate --format csv --measured " + file + " --measured " + image);
  REQUIRE(csv.code == 0);
  const std::string head = csv.out.substr(0, csv.out.find('\n'));
  CHECK(head.size() > 16);
  CHECK(head.rfind(",sequence_length") == head.size() - 16);
  CHECK(csv.out.find(",256\n") != std::string::npos);
  CHECK(csv.out.substr(csv.out.size() - 2) == ",\n");  // the image run's cell is empty
  // Runs without one keep their columns and fields.
  const auto rows = validate_runs({parse_measured_run(synthetic_run(), "tiny_run.json")}, {});
  CHECK(validation_csv(rows).find("sequence_length") == std::string::npos);
  CHECK_FALSE(validation_json(rows)["runs"][0].contains("sequence_length"));
}

TEST_CASE("validate: a sequence_length on an image model, or beyond the positions, exits 2 naming the file and field") {
  study_test::TempDir tmp("val_seq_bad");
  struct Case {
    std::string name;
    std::function<void(Json&)> edit;
    std::string rule;
  };
  const Case cases[] = {
      {"resnet50_run.json", [](Json& j) { j["model"] = "resnet50"; j["sequence_length"] = 224; }, "applies to language models (input: token ids)"},
      {"vit_run.json", [](Json& j) { j["model"] = "vit_b_16"; j["sequence_length"] = 197; }, "whose size fixes its sequence of patches"},
      {"long_run.json", [](Json& j) { j["sequence_length"] = 2048; }, "is longer than gpt2_small's 1024 learned positions"},
      {"zero_run.json", [](Json& j) { j["sequence_length"] = 0; }, "$.sequence_length"},
      {"text_run.json", [](Json& j) { j["sequence_length"] = "long"; }, "$.sequence_length"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    Json j = language_model_run();
    c.edit(j);
    const std::string file = tmp.file(c.name, j.dump());
    auto r = dtsim_cli("validate --measured " + file);
    CHECK(r.code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find(file + ": $.sequence_length") != std::string::npos);
    CHECK(r.err.find(c.rule) != std::string::npos);
  }
  // The same rule as predict's --seq-len on an image model.
  auto p = dtsim_cli("predict --model resnet50 --batch-per-gpu 8 --seq-len 224");
  CHECK(p.code == 2);
  CHECK(p.err.find("--seq-len: applies to language models (input: token ids)") != std::string::npos);
}
