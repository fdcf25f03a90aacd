#include <algorithm>
// dtsim plan (study/plan.hpp, docs/plan.md): what it reports is what predict says; what it skips is
// counted; the outcome does not depend on the thread count; bad input exits 2 with one line.
#include <catch2/catch.hpp>

#include <set>

#include "core/error.hpp"
#include "report/plot.hpp"
#include "core/json_util.hpp"
#include "sim/framework.hpp"
#include "workload/model_json.hpp"
#include "study/plan.hpp"
#include "study/study.hpp"
#include "study_cli.hpp"

using namespace dtsim;
using study_test::run_dtsim;

namespace {

PlanSpec small_plan() {
  PlanSpec s;
  s.model = "resnet50";
  s.clusters = {"h100-sxm", "a100-sxm"};
  s.gpus.clear();
  for (int64_t g = 1; g <= 40; ++g) s.gpus.push_back(g);
  s.batches = {32, 128};
  s.precisions = {"fp32", "bf16"};
  s.what_ifs = what_if_grid({{"nic_Gbps", {100, 400}}});
  s.bucket_mbs = {1, 25};
  s.dataset_size = 1281167;
  s.epochs = 90;
  s.top = 5;
  return s;
}

// The cluster exactly as `dtsim predict --cluster NAME [--nic-Gbps X] --bucket-mb B` builds it.
ClusterSpec predict_cluster(const PlanConfig& c) {
  ClusterSpec cl = apply_what_if(apply_framework(load_cluster(c.cluster), load_framework(kDefaultFrameworkProfile)), c.what_if);
  set_bucket_mb(cl, c.bucket_mb, "--bucket-mb");
  return cl;
}

void check_against_predict(const PlanConfig& c, const PlanSpec& s) {
  TrainingConfig cfg;
  cfg.gpus = c.gpus;
  cfg.batch_per_gpu = c.batch_per_gpu;
  cfg.precision = parse_precision(c.precision);
  cfg.mode = c.mode;
  cfg.algo = c.algo;
  cfg.strategy = c.strategy;
  const ClusterSpec cl = predict_cluster(c);
  const Prediction p = predict(load_model(s.model), cl, cfg);
  CHECK(p.iteration_s == c.iteration_s);  // exactly
  CHECK(p.nodes == c.nodes);
  TrainGoal goal;
  goal.dataset_size = s.dataset_size;
  goal.epochs = s.epochs;
  goal.price_per_gpu_hour = *cl.price_per_gpu_hour;
  const TrainEstimate e = train_estimate(p, goal);
  CHECK(e.time_s == c.time_to_train_s);
  CHECK(*e.cost == c.cost);
  CHECK(c.price_per_gpu_hour == *cl.price_per_gpu_hour);
}

bool dominates(const PlanConfig& a, const PlanConfig& b) {
  return a.time_to_train_s <= b.time_to_train_s && a.cost <= b.cost && (a.time_to_train_s < b.time_to_train_s || a.cost < b.cost);
}

}  // namespace

TEST_CASE("plan: the fastest and the cheapest are predict()'s own numbers for those configurations", "[plan]") {
  const PlanSpec s = small_plan();
  const PlanResult r = run_plan(s);
  REQUIRE(r.evaluated == 2u * 2 * 2 * 2 * 2 * 40);
  CHECK(r.note.empty());  // the fast search agreed with predict() on everything it reported
  REQUIRE(r.fastest);
  REQUIRE(r.cheapest);
  check_against_predict(*r.fastest, s);
  check_against_predict(*r.cheapest, s);
  for (const auto& c : r.top) check_against_predict(c, s);
  // The front runs from the fastest to the cheapest, each point faster or cheaper than every other.
  REQUIRE(!r.pareto.empty());
  CHECK(r.pareto.front().index == r.fastest->index);
  CHECK(r.pareto.back().index == r.cheapest->index);
  for (size_t i = 1; i < r.pareto.size(); ++i) {
    CHECK(r.pareto[i - 1].time_to_train_s <= r.pareto[i].time_to_train_s);
    CHECK(r.pareto[i - 1].cost > r.pareto[i].cost);
  }
  for (const auto& a : r.pareto)
    for (const auto& b : r.pareto) CHECK_FALSE(dominates(a, b));
  for (const auto& t : r.top) {
    CHECK(t.time_to_train_s >= r.fastest->time_to_train_s);
    CHECK(t.cost >= r.cheapest->cost);
  }
}

TEST_CASE("plan: every configuration's time is predict()'s, not only the reported ones", "[plan]") {
  // A search small enough to predict every configuration one by one: the fastest and the cheapest
  // must be the minima of predict() over all of them.
  PlanSpec s;
  s.model = "resnet18";
  s.clusters = {"h100-sxm", "l40s"};
  s.gpus = {1, 2, 8, 9, 16, 24};
  s.batches = {16, 64};
  s.precisions = {"fp32", "bf16"};
  s.bucket_mbs = {2, 25};
  s.dataset_size = 100000;
  s.epochs = 3;
  s.partial_nodes = true;  // 9 GPUs on 8-GPU nodes too
  s.top = 1000;  // every configuration reported, so run_plan checks each against predict() itself
  const PlanResult r = run_plan(s);
  CHECK(r.top.size() == r.feasible);
  CHECK(r.note.empty());
  double best_time = 1e300, best_cost = 1e300;
  for (const auto& cl : s.clusters)
    for (double mb : s.bucket_mbs)
      for (const auto& prec : s.precisions)
        for (int64_t b : s.batches)
          for (int64_t g : s.gpus) {
            ClusterSpec c = apply_framework(load_cluster(cl), load_framework(kDefaultFrameworkProfile));
            set_bucket_mb(c, mb, "--bucket-mb");
            TrainingConfig cfg;
            cfg.gpus = g;
            cfg.batch_per_gpu = b;
            cfg.precision = parse_precision(prec);
            const Prediction p = predict(load_model(s.model), c, cfg);
            TrainGoal goal;
            goal.dataset_size = s.dataset_size;
            goal.epochs = s.epochs;
            goal.price_per_gpu_hour = *c.price_per_gpu_hour;
            const TrainEstimate e = train_estimate(p, goal);
            best_time = std::min(best_time, e.time_s);
            best_cost = std::min(best_cost, *e.cost);
          }
  REQUIRE(r.feasible == r.evaluated);
  CHECK(r.fastest->time_to_train_s == best_time);
  CHECK(r.cheapest->cost == best_cost);
}

TEST_CASE("plan: configurations beyond memory, the global-batch limit, the cluster, the deadline or the budget are skipped and counted", "[plan]") {
  PlanSpec s;
  s.model = "vgg16";
  s.clusters = {"h100-sxm-2x2", "l40s"};  // 4 GPUs; 1024
  s.gpus = {1, 2, 3, 4, 5, 8};
  s.batches = {8, 64, 4096};  // 4096 images of vgg16 fit in no GPU
  s.dataset_size = 50000;
  s.epochs = 1;
  s.price_per_gpu_hour = 2.0;  // h100-sxm-2x2 has no price of its own
  s.max_global_batch = 256;
  s.partial_nodes = true;  // 3 and 5 GPUs on h100-sxm-2x2's 2-GPU nodes too (counted apart below)
  const PlanResult r = run_plan(s);
  CHECK(r.evaluated == 2 * 6 * 3);
  // h100-sxm-2x2: GPU counts 5 and 8, every batch (2 x 3).
  CHECK(r.over_capacity == 6);
  // Within capacity, global batch over 256: batch 64 at 5 and 8 GPUs on l40s, batch 4096 everywhere else.
  CHECK(r.over_global_batch == 2 + (4 + 6));
  CHECK(r.out_of_memory == 0);  // every batch that would not fit is over the global-batch limit first
  CHECK(r.feasible + r.over_capacity + r.over_global_batch + r.out_of_memory + r.over_deadline + r.over_budget == r.evaluated);

  s.max_global_batch.reset();
  const PlanResult m = run_plan(s);
  CHECK(m.out_of_memory == 4 + 6);  // batch 4096 wherever the GPU count fits the cluster
  CHECK(m.priced == m.evaluated - m.over_capacity - m.out_of_memory);

  // A deadline and a budget between the extremes: some over each, the fastest and the cheapest within.
  const double mid_time = (m.fastest->time_to_train_s + m.cheapest->time_to_train_s) / 2;
  s.deadline_s = mid_time;
  const PlanResult d = run_plan(s);
  CHECK(d.over_deadline > 0);
  CHECK(d.fastest->index == m.fastest->index);
  CHECK(d.feasible + d.over_deadline == m.feasible);
  s.deadline_s.reset();
  s.budget = (m.fastest->cost + m.cheapest->cost) / 2;
  const PlanResult b = run_plan(s);
  CHECK(b.over_budget > 0);
  CHECK(b.cheapest->index == m.cheapest->index);
  CHECK(b.feasible + b.over_budget == m.feasible);
}

TEST_CASE("plan: the outcome does not depend on the number of threads", "[plan]") {
  PlanSpec s = small_plan();
  s.threads = 1;
  const PlanResult one = run_plan(s);
  s.threads = 3;
  const PlanResult three = run_plan(s);
  REQUIRE(one.pareto.size() == three.pareto.size());
  for (size_t i = 0; i < one.pareto.size(); ++i) {
    CHECK(one.pareto[i].index == three.pareto[i].index);
    CHECK(one.pareto[i].iteration_s == three.pareto[i].iteration_s);
  }
  REQUIRE(one.top.size() == three.top.size());
  for (size_t i = 0; i < one.top.size(); ++i) CHECK(one.top[i].index == three.top[i].index);
  CHECK(one.feasible == three.feasible);
}

TEST_CASE("plan: other strategies than dp run predict() per configuration", "[plan]") {
  PlanSpec s;
  s.model = "resnet18";
  s.clusters = {"h100-sxm"};
  s.gpus = {8, 16, 32};
  s.batches = {64};
  s.strategies = {"dp", "hierarchical"};
  s.dataset_size = 100000;
  s.epochs = 1;
  const PlanResult r = run_plan(s);
  CHECK(r.feasible == 6);
  // A strategy parameter goes to the strategies that read it only.
  s.strategies = {"dp", "local-sgd"};
  s.strategy_params.tau = 4;
  const PlanResult t = run_plan(s);
  CHECK(t.feasible == 6);
  CHECK(t.note.empty());
  std::set<std::string> strategies;
  for (const auto& c : r.top) strategies.insert(c.strategy);
  CHECK(strategies.size() == 2);
}

TEST_CASE("dtsim plan: JSON keys, and the fastest and cheapest are what dtsim predict prints", "[plan][cli]") {
  const std::string common = "--model resnet50 --dataset-size 1281167 --epochs 90";
  const auto r = run_dtsim("plan " + common + " --cluster h100-sxm,a100-sxm --gpus 1..24 --batch-per-gpu 64,128 --precision fp32,bf16 --nic-Gbps 200,400 --bucket-mb 5,25 --format json");
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  for (const char* k : {"evaluated", "feasible", "pareto", "fastest", "cheapest", "top", "skipped"}) CHECK(j.contains(k));
  CHECK(j["evaluated"] == 2 * 24 * 2 * 2 * 2 * 2);
  REQUIRE(j["pareto"].is_array());
  for (const char* which : {"fastest", "cheapest"}) {
    const Json& c = j[which];
    for (const char* k : {"cluster", "gpus", "nodes", "batch_per_gpu", "precision", "strategy", "algo", "nic_Gbps", "bucket_mb", "iteration_s",
                          "time_to_train_s", "cost"})
      CHECK(c.contains(k));
    const auto p = run_dtsim("predict " + common + " --cluster " + c["cluster"].get<std::string>() + " --gpus " + std::to_string(c["gpus"].get<int64_t>()) +
                             " --batch-per-gpu " + std::to_string(c["batch_per_gpu"].get<int64_t>()) + " --precision " + c["precision"].get<std::string>() +
                             " --strategy " + c["strategy"].get<std::string>() + " --algo " + c["algo"].get<std::string>() + " --nic-Gbps " +
                             c["nic_Gbps"].dump() + " --bucket-mb " + c["bucket_mb"].dump() + " --price-per-gpu-hour " + c["price_per_gpu_hour"].dump() +
                             " --format json");
    REQUIRE(p.code == 0);
    const Json pj = Json::parse(p.out);
    CHECK(pj["iteration_s"].get<double>() == c["iteration_s"].get<double>());
    CHECK(pj["nodes"].get<int64_t>() == c["nodes"].get<int64_t>());
    CHECK(pj["train"]["time_s"].get<double>() == c["time_to_train_s"].get<double>());
    CHECK(pj["train"]["cost"].get<double>() == c["cost"].get<double>());
  }
  // Table and CSV carry the same configurations.
  const auto csv = run_dtsim("plan " + common + " --cluster h100-sxm --gpus 1..8 --batch-per-gpu 64 --format csv");
  REQUIRE(csv.code == 0);
  CHECK(csv.out.rfind("set,cluster,gpus,nodes,batch_per_gpu,global_batch,steps_per_epoch,precision,mode,strategy,algo,nic_Gbps,bucket_mb,iteration_s,"
                      "time_to_train_s,cost,bottleneck\n",
                      0) == 0);
  CHECK(csv.out.find("\nfastest,h100-sxm,") != std::string::npos);
  const auto table = run_dtsim("plan " + common + " --cluster h100-sxm --gpus 1..8 --batch-per-gpu 64");
  REQUIRE(table.code == 0);
  CHECK(table.out.find("Pareto front") != std::string::npos);
}

TEST_CASE("dtsim plan --seq-len: a language model's configurations at that sequence length, as predict prices them", "[plan][cli]") {
  const std::string common = "--model gpt2_small --dataset-size 100000 --epochs 1 --cluster h100-sxm --gpus 8 --batch-per-gpu 8 --precision bf16";
  const auto shortseq = run_dtsim("plan " + common + " --seq-len 256 --format json");
  const auto full = run_dtsim("plan " + common + " --format json");
  REQUIRE(shortseq.code == 0);
  REQUIRE(full.code == 0);
  const double t256 = Json::parse(shortseq.out)["fastest"]["iteration_s"].get<double>();
  const double t1024 = Json::parse(full.out)["fastest"]["iteration_s"].get<double>();
  CHECK(t256 < t1024);  // a quarter of the tokens per step
  const auto p = run_dtsim("predict --model gpt2_small --cluster h100-sxm --gpus 8 --batch-per-gpu 8 --precision bf16 --seq-len 256 --format json");
  REQUIRE(p.code == 0);
  CHECK(Json::parse(p.out)["iteration_s"].get<double>() == t256);
  // An image model has no sequence length to set: exit 2, one line naming the flag.
  const auto bad = run_dtsim("plan --model resnet18 --dataset-size 1000 --epochs 1 --cluster h100-sxm --batch-per-gpu 32 --seq-len 128");
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--seq-len") != std::string::npos);
  CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
}

TEST_CASE("dtsim plan: bad input exits 2 with one line naming the flag", "[plan][cli]") {
  const std::string ok = "plan --model resnet18 --dataset-size 1000 --epochs 1 --cluster h100-sxm --batch-per-gpu 32";
  const std::pair<std::string, std::string> cases[] = {
      {ok + " --bucket-mb 0", "--bucket-mb"},
      {ok + " --bucket-mb 5,-1", "--bucket-mb"},
      {ok + " --gpus 0..4", "--gpus"},
      {ok + " --objective speed", "--objective"},
      {ok + " --top 0", "--top"},
      {ok + " --deadline-h 0", "--deadline-h"},
      {ok + " --budget -5", "--budget"},
      {ok + " --max-global-batch 0", "--max-global-batch"},
      {ok + " --precision fp32,fp99", "--precision"},
      {ok + " --strategy dp,nope", "--strategy"},
      {ok + " --algo auto,nope", "--algo"},
      {ok + " --cluster h100-sxm,", "--cluster"},
      {ok + " --threads 0", "--threads"},
      {ok + " --strategy dp,hierarchical --tau 4", "--tau"},
      {"plan --model resnet18 --dataset-size 1000 --epochs 1 --cluster v100-sxm2 --batch-per-gpu 32", "--price-per-gpu-hour"},
      {"plan --model resnet18 --dataset-size 0 --epochs 1 --batch-per-gpu 32", "--dataset-size"},
      {"plan --model resnet18 --dataset-size 10 --epochs -1 --batch-per-gpu 32", "--epochs"},
      {"predict --model resnet18 --batch-per-gpu 32 --bucket-mb 0", "--bucket-mb"},
      {"sweep --model resnet18 --batch-per-gpu 32 --bucket-mb -2", "--bucket-mb"},
  };
  for (const auto& [args, flag] : cases) {
    INFO(args);
    const auto r = run_dtsim(args);
    CHECK(r.code == 2);
    CHECK(study_test::lines(r.err) == 1);
    CHECK(r.err.find(flag) != std::string::npos);
  }
}

TEST_CASE("cluster files: price_per_gpu_hour is read, optional and checked", "[plan]") {
  CHECK(load_cluster("h100-sxm").price_per_gpu_hour.has_value());
  CHECK_FALSE(load_cluster("h100-sxm").price_source.empty());
  CHECK_FALSE(load_cluster("v100-sxm2").price_per_gpu_hour.has_value());
  Json doc = load_json_file(cluster_path("h100-sxm"));
  doc["price_per_gpu_hour"] = -1;
  CHECK_THROWS_AS(parse_cluster(doc, "x.json"), InputError);
  doc["price_per_gpu_hour"] = "6";
  CHECK_THROWS_AS(parse_cluster(doc, "x.json"), InputError);
}

TEST_CASE("plan: --bucket-mb changes DDP's buckets as the cluster file's bucket_MiB does", "[plan]") {
  ClusterSpec a = load_cluster("h100-sxm");
  set_bucket_mb(a, 5, "--bucket-mb");
  CHECK(a.framework.bucket_bytes == 5 * 1048576);
  ClusterSpec b = load_cluster("h100-sxm");
  set_bucket_mb(b, 25, "--bucket-mb");
  CHECK(b.framework.bucket_bytes == load_cluster("h100-sxm").framework.bucket_bytes);
  CHECK_THROWS_AS(set_bucket_mb(b, 0, "--bucket-mb"), InputError);
  CHECK_THROWS_AS(set_bucket_mb(b, 2e6, "--bucket-mb"), InputError);
}

TEST_CASE("plan: the budget's search of 1,048,576 configurations reports predict()'s own fastest and cheapest", "[plan][slow]") {
  // The search of BM_Plan1M (bench/README.md), about a second on two cores.
  const PlanSpec s = reference_plan_1m();
  const PlanResult r = run_plan(s);
  CHECK(r.evaluated == 1048576u);
  CHECK(r.note.empty());
  REQUIRE(r.fastest);
  check_against_predict(*r.fastest, s);
  check_against_predict(*r.cheapest, s);
}

TEST_CASE("dtsim plan --plot draws the front, and without gnuplot exits 2 and writes nothing", "[plan][cli]") {
  study_test::TempDir tmp("plan_plot");
  const std::string args = "plan --model resnet18 --dataset-size 10000 --epochs 1 --cluster h100-sxm,a100-sxm --gpus 1..16 --batch-per-gpu 32,128 --plot ";
  const auto missing = run_dtsim(args + tmp.path + "/none.png --out " + tmp.path + "/out.txt", "DTSIM_GNUPLOT=/nonexistent");
  CHECK(missing.code == 2);
  CHECK(study_test::lines(missing.err) == 1);
  CHECK(missing.err.find("--plot") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(tmp.path + "/out.txt"));
  CHECK_FALSE(std::filesystem::exists(tmp.path + "/none.png"));
  try {
    find_gnuplot("--plot");
  } catch (const InputError&) {
    WARN("gnuplot is not installed: the front is not drawn");
    return;
  }
  const auto r = run_dtsim(args + tmp.path + "/front.svg");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::string svg = study_test::slurp(tmp.path + "/front.svg");
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("Pareto front") != std::string::npos);
}

TEST_CASE("plan: sweep --bucket-mb prices the same step as predict --bucket-mb", "[plan][cli]") {
  const auto s = run_dtsim("sweep --model resnet50 --cluster h100-sxm --gpus 64 --batch-per-gpu 64 --bucket-mb 5 --format json");
  const auto p = run_dtsim("predict --model resnet50 --cluster h100-sxm --gpus 64 --batch-per-gpu 64 --bucket-mb 5 --format json");
  const auto d = run_dtsim("predict --model resnet50 --cluster h100-sxm --gpus 64 --batch-per-gpu 64 --format json");
  REQUIRE(s.code == 0);
  REQUIRE(p.code == 0);
  REQUIRE(d.code == 0);
  const Json sj = Json::parse(s.out), pj = Json::parse(p.out), dj = Json::parse(d.out);
  CHECK(sj[0]["iteration_s"].get<double>() == pj["iteration_s"].get<double>());
  CHECK(pj["iteration_s"].get<double>() != dj["iteration_s"].get<double>());  // 5 MiB buckets change the step
}

TEST_CASE("plan: a job of more GPUs than a node holds takes whole nodes unless partial nodes are asked for", "[plan]") {
  PlanSpec s;
  s.model = "resnet18";
  s.clusters = {"h100-sxm"};  // 8 GPUs a node
  s.gpus.clear();
  for (int64_t g = 1; g <= 24; ++g) s.gpus.push_back(g);
  s.batches = {64};
  s.dataset_size = 100000;
  s.epochs = 1;
  const PlanResult whole = run_plan(s);
  CHECK(whole.partial_node == 14);  // 9..15 and 17..23
  CHECK(whole.feasible + whole.partial_node == whole.evaluated);
  for (const auto* c : {&*whole.fastest, &*whole.cheapest}) CHECK((c->gpus <= 8 || c->gpus % 8 == 0));
  s.partial_nodes = true;
  const PlanResult any = run_plan(s);
  CHECK(any.partial_node == 0);
  CHECK(any.feasible == any.evaluated);
  const auto cli = run_dtsim("plan --model resnet18 --gpus 1..24 --batch-per-gpu 64 --dataset-size 100000 --epochs 1 --format json");
  REQUIRE(cli.code == 0);
  CHECK(Json::parse(cli.out)["skipped"]["partial_node"] == 14);
  const auto with = run_dtsim("plan --model resnet18 --gpus 1..24 --batch-per-gpu 64 --dataset-size 100000 --epochs 1 --partial-nodes --format json");
  REQUIRE(with.code == 0);
  CHECK(Json::parse(with.out)["skipped"]["partial_node"] == 0);
}

TEST_CASE("plan: memory formats, optimizers and executions are axes, each configuration priced in its own mode", "[plan]") {
  PlanSpec s;
  s.model = "resnet50";
  s.clusters = {"h100-sxm"};
  s.gpus = {1, 8};
  s.batches = {32, 128};
  s.precisions = {"bf16"};
  StepMode fast;
  fast.memory_format = MemoryFormat::ChannelsLast;
  fast.execution = Execution::CudaGraphs;
  s.modes = {StepMode{}, fast};
  s.dataset_size = 1281167;
  s.epochs = 1;
  s.top = 100;  // every configuration, each checked against predict() in its mode
  const PlanResult r = run_plan(s);
  CHECK(r.evaluated == 2 * 2 * 2);
  CHECK(r.note.empty());
  std::set<int> formats;
  for (const auto& c : r.top) {
    formats.insert(static_cast<int>(c.mode.memory_format));
    check_against_predict(c, s);
  }
  CHECK(formats.size() == 2);
  // The GPU-paced ResNet-50 step runs faster in channels_last with CUDA graphs: the fastest takes it.
  CHECK(r.fastest->mode.memory_format == MemoryFormat::ChannelsLast);
  const auto cli = run_dtsim("plan --model resnet50 --gpus 1,8 --batch-per-gpu 32,128 --precision bf16 --memory-format contiguous,channels_last "
                             "--execution eager,cuda-graphs --dataset-size 1281167 --epochs 1 --format json");
  REQUIRE(cli.code == 0);
  const Json j = Json::parse(cli.out);
  CHECK(j["evaluated"] == 2 * 2 * 4);
  CHECK(j["modes"].size() == 4);
  for (const char* k : {"memory_format", "optimizer", "execution", "bottleneck", "global_batch", "steps_per_epoch"}) CHECK(j["fastest"].contains(k));
}

TEST_CASE("plan: the fastest and the cheapest say what holds their step back, and a host floor says so", "[plan]") {
  PlanSpec s;
  s.model = "mobilenet_v2";  // at batch 1 the host issues kernels slower than the GPU runs them
  s.clusters = {"h100-sxm", "l40s"};
  s.gpus = {1};
  s.batches = {1};
  s.dataset_size = 10000;
  s.epochs = 1;
  const PlanResult r = run_plan(s);
  REQUIRE(r.fastest);
  CHECK(r.fastest->bottleneck == "host");
  CHECK(r.fastest->host_idle_share > 0);
  const std::string text = run_dtsim("plan --model mobilenet_v2 --cluster h100-sxm,l40s --gpus 1 --batch-per-gpu 1 --dataset-size 10000 --epochs 1").out;
  CHECK(text.find("Fastest: each step is host-bound") != std::string::npos);
  CHECK(text.find("a faster GPU would not train faster") != std::string::npos);
  const PlanResult big = run_plan(small_plan());
  for (const auto* c : {&*big.fastest, &*big.cheapest})
    CHECK((c->bottleneck == "compute" || c->bottleneck == "memory" || c->bottleneck == "communication" || c->bottleneck == "host"));
}

TEST_CASE("plan: a global batch beyond the common bound is noted unless --max-global-batch bounds it, and ties are counted", "[plan][cli]") {
  const std::string common = "plan --model resnet50 --cluster h100-sxm --gpus 8..1024:x2 --batch-per-gpu 256 --precision bf16 --dataset-size 1281167 --epochs 90";
  const auto wide = run_dtsim(common);
  REQUIRE(wide.code == 0);
  CHECK(wide.out.find("Note: the fastest configuration's global batch is 262144 samples") != std::string::npos);
  const auto bounded = run_dtsim(common + " --max-global-batch 32768");
  REQUIRE(bounded.code == 0);
  CHECK(bounded.out.find("global batch is") == std::string::npos);
  // On one GPU two all-reduce algorithms price the same step: the fastest has a twin, counted.
  PlanSpec s;
  s.model = "resnet18";
  s.clusters = {"h100-sxm"};
  s.gpus = {1};
  s.batches = {64};
  s.algos = {"ring", "tree"};
  s.dataset_size = 10000;
  s.epochs = 1;
  const PlanResult r = run_plan(s);
  CHECK(r.fastest_ties == 1);
  CHECK(r.cheapest_ties == 1);
}
