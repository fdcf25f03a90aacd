// Sweeps: the sweep file's strict validation, what-if axes, and the sweep command's outputs.
#include <catch2/catch.hpp>

#include <filesystem>

#include "core/args.hpp"
#include "core/error.hpp"
#include "workload/model_json.hpp"
#include "sim/predict.hpp"
#include "study/study.hpp"
#include "compute/compute_model.hpp"
#include "study_cli.hpp"

using namespace dtsim;
using study_test::run_dtsim;
using study_test::lines;

static SweepSpec parse(const std::string& text) { return parse_sweep(Json::parse(text), "s.json"); }

// The message of the InputError that parsing `text` throws ("" if none).
static std::string parse_error(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

static const char* kMinimal = R"({"name":"t","models":["resnet18"],"batch_per_gpu":[8],"gpus":"1..8:x2")";

TEST_CASE("sweep file: a minimal file and its defaults") {
  SweepSpec s = parse(std::string(kMinimal) + "}");
  CHECK(s.models == std::vector<std::string>{"resnet18"});
  CHECK(s.gpus == std::vector<int64_t>{1, 2, 4, 8});
  CHECK(s.batches == std::vector<int64_t>{8});
  REQUIRE(s.what_ifs.size() == 1);
  CHECK(s.what_ifs[0].is_baseline());
  CHECK(sweep_size(s) == 4);
  CHECK_FALSE(s.train.active());
}

TEST_CASE("sweep file: scenarios times the what-if grid") {
  SweepSpec s = parse(std::string(kMinimal) + R"(,
      "scenarios": [{"name": "today"}, {"name": "next gen", "flops_scale": 2, "memory_bandwidth_scale": 1.5}],
      "what_if": {"inter_node_bandwidth_scale": [0.5, 1, 2], "latency_scale": "1..4:x2"}})");
  REQUIRE(s.what_ifs.size() == 2 * 3 * 3);
  CHECK(s.what_ifs[0].name == "today, inter-node bw x0.5");
  CHECK(s.what_ifs[0].inter_node_bandwidth_scale == 0.5);
  const WhatIf& last = s.what_ifs.back();
  CHECK(last.flops_scale == 2);
  CHECK(last.memory_bandwidth_scale == 1.5);
  CHECK(last.inter_node_bandwidth_scale == 2);
  CHECK(last.latency_scale == 4);
  CHECK(last.label() == "next gen, inter-node bw x2, latency x4");
}

TEST_CASE("sweep file: every rule broken names the file, the JSON path and the rule") {
  struct Case {
    std::string text, path, rule;
  };
  const std::string m = kMinimal;
  const Case cases[] = {
      {"[1]", "s.json: $", "must be an object"},
      {m + R"(,"colour":"red"})", "$.colour", "unknown field"},
      {R"({"models":["resnet18"],"batch_per_gpu":[8],"gpus":[1]})", "$.name", "required field is missing"},
      {R"({"name":"t","models":[],"batch_per_gpu":[8],"gpus":[1]})", "$.models", "non-empty"},
      {R"({"name":"t","models":["nosuchnet"],"batch_per_gpu":[8],"gpus":[1]})", "$.models[0]", "unknown model"},
      {R"({"name":"t","models":["resnet18"],"batch_per_gpu":[8, 0],"gpus":[1]})", "$.batch_per_gpu[1]", "must be in"},
      {R"({"name":"t","models":["resnet18"],"batch_per_gpu":[8.5],"gpus":[1]})", "$.batch_per_gpu[0]", "fraction"},
      {R"({"name":"t","models":["resnet18"],"batch_per_gpu":"8,x","gpus":[1]})", "$.batch_per_gpu", "not an integer"},
      {R"({"name":"t","models":["resnet18"],"batch_per_gpu":[8]})", "$.gpus", "exactly one of gpus and nodes"},
      {R"({"name":"t","models":["resnet18"],"batch_per_gpu":[8],"gpus":[1],"nodes":[1]})", "$.nodes", "exactly one of gpus and nodes"},
      {m + R"(,"cluster":"nowhere"})", "$.cluster", "unknown cluster"},
      {m + R"(,"precision":"fp8"})", "$.precision", "unknown precision"},
      {m + R"(,"algo":"magic"})", "$.algo", "unknown algorithm"},
      {m + R"(,"overlap":"yes"})", "$.overlap", "true or false"},
      {m + R"(,"cluster_nodes":0})", "$.cluster_nodes", "must be in"},
      {m + R"(,"what_if":{"warp_drive":[2]}})", "$.what_if.warp_drive", "unknown field"},
      {m + R"(,"what_if":{"flops_scale":[2, -1]}})", "$.what_if.flops_scale[1]", "must be in"},
      {m + R"(,"what_if":{"flops_scale":[]}})", "$.what_if.flops_scale", "must not be empty"},
      {m + R"(,"what_if":{"gpus_per_node":[2.5]}})", "$.what_if.gpus_per_node[0]", "integer"},
      {m + R"(,"what_if":{"latency_scale":"1..4"}})", "$.what_if.latency_scale", "factor"},
      {m + R"(,"scenarios":[{"flops_scale":2}]})", "$.scenarios[0].name", "required field is missing"},
      {m + R"(,"scenarios":[{"name":"x","nic_Gbps":"fast"}]})", "$.scenarios[0].nic_Gbps", "must be a number"},
      {m + R"(,"scenarios":[{"name":"x","speed":2}]})", "$.scenarios[0].speed", "unknown field"},
      {m + R"(,"training":{"dataset_size":1000}})", "$.training.dataset_size", "both the dataset size and the number of epochs"},
      {m + R"(,"training":{"dataset_size":1000,"epochs":0}})", "$.training.epochs", "must be in (0, 1000000]"},
      {m + R"(,"training":{"price_per_gpu_hour":2}})", "$.training.price_per_gpu_hour", "needs the dataset size"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    std::string err = parse_error(c.text);
    CHECK(err.find("s.json") != std::string::npos);
    CHECK(err.find(c.path) != std::string::npos);
    CHECK(err.find(c.rule) != std::string::npos);
  }
}

TEST_CASE("sweep file: the shipped studies parse") {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(config_dir() + "/sweeps")) {
    if (e.path().extension() != ".json") continue;
    INFO(e.path());
    SweepSpec s = load_sweep(e.path().string());
    CHECK(sweep_size(s) > 0);
    ++n;
  }
  CHECK(n >= 2);
}

TEST_CASE("sweep: kernel times priced once per model and batch, rows equal single predictions") {
  // A counting model under the remembering one: how many kernel lists reach the inner model.
  struct Counting : ComputeModel {
    explicit Counting(const GpuSpec& gpu) : inner(make_compute_model("roofline", gpu)) {}
    std::unique_ptr<ComputeModel> inner;
    mutable int lists = 0;
    std::string name() const override { return "counting"; }
    KernelTime time(const KernelDesc& k) const override { return inner->time(k); }
    void times(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& out) const override {
      ++lists;
      inner->times(ks, out);
    }
  };
  // The first model the pricing makes is the cluster's own (the others: the bottleneck's 2x GPUs).
  const Counting* seen = nullptr;
  StepPricing pricing("roofline", [&](const ClusterSpec& on) {
    auto counting = std::make_unique<Counting>(on.gpu);
    if (!seen) seen = counting.get();
    return counting;
  });
  Graph g = load_model("resnet18");
  ClusterSpec c = load_cluster("h100-sxm");
  TrainingConfig cfg;
  cfg.compute_model = "roofline";
  cfg.batch_per_gpu = 16;
  for (int64_t gpus : {1, 2, 8, 64}) {
    cfg.gpus = gpus;
    const double alone = predict(g, c, cfg).iteration_s;
    CHECK(predict(g, c, cfg, pricing).iteration_s == alone);
  }
  // Forward, backward and update lists, priced once for all four GPU counts and their baselines.
  REQUIRE(seen);
  CHECK(seen->lists == 3);
  cfg.batch_per_gpu = 32;  // forward and backward kernels change with the batch; the optimizer's do not
  predict(g, c, cfg, pricing);
  CHECK(seen->lists == 5);
}

TEST_CASE("what-ifs change the cluster as asked") {
  ClusterSpec c = load_cluster("h100-sxm");
  WhatIf w;
  w.flops_scale = 2;
  w.memory_bandwidth_scale = 0.5;
  w.nic_Gbps = 800;
  w.inter_node_bandwidth_scale = 2;
  w.intra_node_GBps = 900;
  w.latency_scale = 0;
  w.gpus_per_node = 4;
  ClusterSpec x = apply_what_if(c, w);
  CHECK(x.gpu.peak_flops[1] == Approx(2 * c.gpu.peak_flops[1]));
  CHECK(x.gpu.memory_bandwidth_Bps == Approx(0.5 * c.gpu.memory_bandwidth_Bps));
  CHECK(x.inter.nic_bandwidth_Bps == Approx(2 * 800e9 / 8));
  CHECK(x.intra.bandwidth_Bps == Approx(900e9));
  CHECK(x.intra.latency_s == 0);
  CHECK(x.inter.latency_s == 0);
  CHECK(x.gpus_per_node == 4);
  CHECK(x.collectives.nccl.base_latency_s[kNcclRing][kNcclSimple] == 0);
  CHECK(x.collectives.nccl.hop_latency_s[kHwNet][kNcclTree][kNcclLL] == 0);
  // Faster links and lower latency never slow a prediction down.
  TrainingConfig cfg;
  cfg.gpus = 256;
  cfg.batch_per_gpu = 32;
  Graph g = load_model("resnet50");
  WhatIf fast;
  fast.inter_node_bandwidth_scale = 4;
  fast.latency_scale = 0.25;
  CHECK(predict(g, apply_what_if(c, fast), cfg).comm_s < predict(g, c, cfg).comm_s);
  CHECK(parse_real_list("--x", "0.25..4:x2", 0, 10) == std::vector<double>{0.25, 0.5, 1, 2, 4});
  CHECK_THROWS_AS(parse_real_list("--x", "1,abc", 0, 10), InputError);
}

TEST_CASE("cli: sweep with what-if flags, nodes, training and every format") {
  auto r = run_dtsim("sweep --model resnet18 --gpus 1..16:x4 --batch-per-gpu 32 --flops-scale 1,4 --framework harness --format json");
  REQUIRE(r.code == 0);
  Json j = Json::parse(r.out);
  REQUIRE(j.size() == 3 * 2);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(j[i]["what_if"]["flops_scale"] == 1.0);
    CHECK(j[i + 3]["what_if"]["flops_scale"] == 4.0);
    CHECK(j[i + 3]["throughput_samples_per_s"].get<double>() > j[i]["throughput_samples_per_s"].get<double>());
    CHECK(j[i]["memory"]["device_bytes"].get<double>() > 0);
    CHECK(j[i]["fits"].is_boolean());
    CHECK(j[i]["verdict"].get<std::string>().find("-bound") != std::string::npos);
  }
  auto nodes = run_dtsim("sweep --model resnet18 --nodes 1,2 --batch-per-gpu 8 --format json");
  REQUIRE(nodes.code == 0);
  Json jn = Json::parse(nodes.out);
  CHECK(jn[1]["gpus"] == 16);
  CHECK(jn[1]["nodes"] == 2);

  auto csv = run_dtsim("sweep --model resnet18 --gpus 1,8 --batch-per-gpu 8,16 --dataset-size 1281167 --epochs 90 --price-per-gpu-hour 3 --format csv");
  REQUIRE(csv.code == 0);
  CHECK(lines(csv.out) == 1 + 4);
  CHECK(csv.out.find("train_time_s,gpu_hours,cost") != std::string::npos);

  auto table = run_dtsim("sweep --model resnet18 --gpus 1..1024:x2 --batch-per-gpu 8 --cluster-nodes 128");
  REQUIRE(table.code == 0);
  CHECK(table.out.find("Verdict") != std::string::npos);
  CHECK(table.out.find("scaling efficiency") != std::string::npos);
  CHECK(table.out.find("fastest that fits") != std::string::npos);
}

TEST_CASE("cli: roofline table, json and csv") {
  auto r = run_dtsim("roofline --model resnet18 --batch-per-gpu 32 --format json");
  REQUIRE(r.code == 0);
  Json j = Json::parse(r.out);
  REQUIRE(j["kernels"].size() > 50);
  for (const auto& k : j["kernels"]) {
    const double flops = k["flops"], bytes = k["bytes"], t = k["time_s"];
    CHECK(k["intensity_flops_per_byte"].get<double>() == Approx(flops / bytes));
    CHECK(k["attained_flops_per_s"].get<double>() == Approx(flops / t));
    // Nothing beats the roof.
    CHECK(k["attained_flops_per_s"].get<double>() <= j["peak_flops_per_s"][k["math"].get<std::string>()].get<double>());
    CHECK(k["attained_flops_per_s"].get<double>() <= k["intensity_flops_per_byte"].get<double>() * j["memory_bandwidth_Bps"].get<double>() * 1.000001);
  }
  auto csv = run_dtsim("roofline --model resnet18 --batch-per-gpu 32 --format csv");
  CHECK(lines(csv.out) == 1 + static_cast<int>(j["kernels"].size()));
  auto table = run_dtsim("roofline --model resnet18 --batch-per-gpu 32 --flops-scale 2");
  CHECK(table.code == 0);
  CHECK(table.out.find("longest kernels") != std::string::npos);
  CHECK(run_dtsim("roofline --help").code == 0);
}

TEST_CASE("cli: time to train and cost are the iteration times the steps") {
  auto r = run_dtsim("predict --model resnet18 --gpus 8 --batch-per-gpu 100 --dataset-size 1000000 --epochs 2 --price-per-gpu-hour 3 --format json");
  REQUIRE(r.code == 0);
  Json j = Json::parse(r.out);
  const double it = j["iteration_s"];
  CHECK(j["train"]["steps_per_epoch"] == 1250);  // ceil(1e6 / 800)
  CHECK(j["train"]["time_s"].get<double>() == Approx(2500 * it));
  CHECK(j["train"]["gpu_hours"].get<double>() == Approx(2500 * it / 3600 * 8));
  CHECK(j["train"]["cost"].get<double>() == Approx(3 * 2500 * it / 3600 * 8));
}

TEST_CASE("cli: bad sweep input exits 2 with one line, and writes nothing") {
  study_test::TempDir tmp("sweepbad");
  std::string bad = tmp.file("bad.json", R"({"name":"t","models":["resnet18"],"batch_per_gpu":[8],"gpus":[1],"what_if":{"flops_scale":[0]}})");
  std::string good = tmp.file("good.json", R"({"name":"t","models":["resnet18"],"batch_per_gpu":[8],"gpus":[1,2]})");
  std::string huge = tmp.file("huge.json", R"({"name":"t","models":["resnet18"],"batch_per_gpu":[8],"gpus":[4096]})");
  struct Case {
    std::string args, must_mention;
  };
  const Case cases[] = {
      {"sweep --sweep " + bad, "$.what_if.flops_scale[0]"},
      {"sweep --sweep " + tmp.path + "/missing.json", "cannot open"},
      {"sweep --sweep " + huge, "$.gpus"},
      {"sweep --sweep " + good + " --model resnet50", "--sweep"},
      {"sweep --sweep " + good + " --precision bf16", "--sweep"},
      {"sweep --batch-per-gpu 8", "--model"},
      {"sweep --model resnet18", "--batch-per-gpu"},
      {"sweep --model resnet18 --batch-per-gpu 8 --flops-scale 0", "--flops-scale"},
      {"sweep --model resnet18 --batch-per-gpu 8 --gpus-per-node 3.5", "--gpus-per-node"},
      {"sweep --model resnet18 --batch-per-gpu 8 --latency-scale 1..8", "--latency-scale"},
      {"sweep --model resnet18 --batch-per-gpu 8 --gpus 1 --nodes 1", "--nodes"},
      {"sweep --model resnet18 --batch-per-gpu 8 --gpus 2048", "--gpus"},
      {"sweep --model resnet18 --batch-per-gpu 8 --dataset-size 100", "--epochs"},
      {"sweep --model resnet18 --batch-per-gpu 8 --price-per-gpu-hour 2", "--price-per-gpu-hour"},
      {"sweep --model resnet18 --batch-per-gpu 8 --plot " + tmp.path + "/x.gif", "--plot"},
      {"predict --model resnet18 --batch-per-gpu 8 --flops-scale 1,2", "--flops-scale"},
      {"predict --model resnet18 --batch-per-gpu 8 --trace " + tmp.path + "/t.txt", "--trace"},
      {"predict --model resnet18 --batch-per-gpu 8 --epochs 3", "--dataset-size"},
      {"roofline --model resnet18 --batch-per-gpu 0", "--batch-per-gpu"},
      {"roofline --model resnet18", "--batch-per-gpu"},
  };
  for (const auto& c : cases) {
    INFO(c.args);
    auto r = run_dtsim(c.args + " --out " + tmp.path + "/out.txt");
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find(c.must_mention) != std::string::npos);
    CHECK(r.out.empty());
    CHECK_FALSE(std::filesystem::exists(tmp.path + "/out.txt"));
  }
  CHECK(std::filesystem::is_empty(tmp.path + "/") == false);  // only the inputs are there
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path)) (void)e, ++files;
  CHECK(files == 3);
}
