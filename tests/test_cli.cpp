// The command-line contract that scripts rely on, run against the real binary.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "study_cli.hpp"

#include "core/json_util.hpp"
#include "network/cluster.hpp"
#include "network/collective.hpp"
#include "sim/framework.hpp"
#include "sim/strategy.hpp"
#include "sim/whatif.hpp"

using dtsim::Json;
namespace fs = std::filesystem;

using CliResult = study_test::Run;
using study_test::slurp;
static CliResult dtsim_cli(const std::string& args) { return study_test::run_dtsim(args); }

using study_test::lines;

TEST_CASE("cli: models --format json lists the zoo with the contract's fields") {
  auto r = dtsim_cli("models --format json");
  REQUIRE(r.code == 0);
  Json j = Json::parse(r.out);
  REQUIRE(j.is_array());
  CHECK(j.size() == 22);  // 13 torchvision CNNs, resnext101_32x4d, vit_b_16, gpt2 small to xl, bert_base, llama2_7b, llama3_8b
  for (const auto& m : j) {
    CHECK(m.contains("name"));
    CHECK(m["params"].get<int64_t>() > 0);
    CHECK(m["fwd_macs_per_sample"].get<int64_t>() > 0);
    CHECK(m["layers"].get<int>() > 0);
  }
  auto one = dtsim_cli("models --model " + std::string(DTSIM_TEST_DATA) + "/tiny.json");
  CHECK(one.code == 0);
  CHECK(one.out.find("4266 parameters") != std::string::npos);
}

TEST_CASE("cli: predict --format json has the contract's fields") {
  auto r = dtsim_cli("predict --model resnet50 --cluster h100-sxm --gpus 16 --batch-per-gpu 64 --format json");
  REQUIRE(r.code == 0);
  Json j = Json::parse(r.out);
  for (const char* f : {"iteration_s", "throughput_samples_per_s", "compute_s", "comm_s", "exposed_comm_s", "scaling_efficiency"}) {
    INFO(f);
    CHECK(j[f].is_number());
  }
  CHECK(j["bottleneck"].is_string());
  REQUIRE(j["layers"].size() == 176);
  for (const auto& l : j["layers"]) {
    CHECK(l["name"].is_string());
    CHECK(l["fwd_s"].is_number());
    CHECK(l["bwd_s"].is_number());
    CHECK(l["grad_bytes"].is_number_integer());
  }
  CHECK(j["gpus"] == 16);
  CHECK(j["nodes"] == 2);
}

TEST_CASE("cli: predict table and csv") {
  auto t = dtsim_cli("predict --model alexnet --batch-per-gpu 32 --precision bf16");
  CHECK(t.code == 0);
  CHECK(t.out.find("iteration") != std::string::npos);
  CHECK(t.out.find("bottleneck") != std::string::npos);
  auto c = dtsim_cli("predict --model alexnet --batch-per-gpu 32 --format csv");
  CHECK(c.code == 0);
  CHECK(lines(c.out) == 2);
  CHECK(c.out.rfind("model,cluster,gpus", 0) == 0);
}

TEST_CASE("cli: sweep gives one row per configuration") {
  auto r = dtsim_cli("sweep --model resnet18,vgg11 --cluster h100-sxm --gpus 1..16:x2 --batch-per-gpu 8,64 --format json");
  REQUIRE(r.code == 0);
  Json j = Json::parse(r.out);
  CHECK(j.size() == 2 * 5 * 2);
  for (const auto& row : j) {
    CHECK(row["iteration_s"].get<double>() > 0);
    CHECK(row["scaling_efficiency"].get<double>() <= 1.0);
  }
  auto csv = dtsim_cli("sweep --model resnet18 --gpus 1,2,3 --batch-per-gpu 8 --format csv");
  CHECK(csv.code == 0);
  CHECK(lines(csv.out) == 4);
  auto table = dtsim_cli("sweep --model resnet18 --gpus 1..4 --batch-per-gpu 8");
  CHECK(table.code == 0);
  // A title line, the table (header, rule, 4 rows), then the sweep's verdict.
  CHECK(table.out.find("\nVerdict\n") != std::string::npos);
  CHECK(lines(table.out.substr(0, table.out.find("\nVerdict\n"))) == 1 + 2 + 4);
}

TEST_CASE("cli: sweep prices kernels with the compute model it is given, as predict does") {
  // --compute-model was once accepted by sweep and ignored (every row used auto).
  for (const char* model : {"roofline", "auto"}) {
    auto s = dtsim_cli(std::string("sweep --model resnet50 --gpus 1,8 --batch-per-gpu 32 --format json --compute-model ") + model);
    auto p = dtsim_cli(std::string("predict --model resnet50 --gpus 8 --batch-per-gpu 32 --format json --compute-model ") + model);
    REQUIRE(s.code == 0);
    REQUIRE(p.code == 0);
    Json rows = Json::parse(s.out), one = Json::parse(p.out);
    REQUIRE(rows.size() == 2);
    CHECK(rows[1]["iteration_s"].get<double>() == Approx(one["iteration_s"].get<double>()).epsilon(1e-9));
  }
  // At batch 256 the GPU paces the step (at 32 the default profile's host does, whatever the kernels take).
  auto roof = Json::parse(dtsim_cli("sweep --model resnet50 --gpus 1 --batch-per-gpu 256 --format json --compute-model roofline").out);
  auto mlp = Json::parse(dtsim_cli("sweep --model resnet50 --gpus 1 --batch-per-gpu 256 --format json --compute-model auto").out);
  CHECK(roof[0]["iteration_s"].get<double>() != Approx(mlp[0]["iteration_s"].get<double>()).epsilon(0.01));
  auto bad = dtsim_cli("sweep --model resnet50 --gpus 1 --batch-per-gpu 32 --compute-model fastest");
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--compute-model") != std::string::npos);
}

TEST_CASE("cli: collective --format json rows") {
  auto r = dtsim_cli("collective --op allreduce --bytes 0,4K,1M,1G --gpus 8 --cluster h100-sxm --format json");
  REQUIRE(r.code == 0);
  Json j = Json::parse(r.out);
  REQUIRE(j.size() == 4);
  CHECK(j[0]["time_s"] == 0.0);
  CHECK(j[3]["bytes"] == 1073741824);
  // The default is NCCL's own choice, and the row says which algorithm and protocol it ran.
  CHECK(j[3]["algo"] == "auto");
  CHECK(j[3]["chosen_algo"] == "ring");
  CHECK(j[3]["protocol"] == "Simple");
  CHECK(j[3]["gpus"] == 8);
  double busbw = j[3]["busbw_GBps"];
  CHECK(busbw > 100);
  CHECK(busbw < 450);
}

// collective takes predict's hardware what-ifs, parsed and applied by the same code
// (cli/study_flags.cpp, sim/whatif.cpp), and says which it applied.
namespace {
Json collective_json(const std::string& args) {
  auto r = dtsim_cli("collective --format json " + args);
  INFO(args << "\n" << r.err);
  REQUIRE(r.code == 0);
  return Json::parse(r.out);
}

// The cells of a collective table's last row, split at blanks.
std::vector<std::string> last_row_cells(const std::string& table) {
  std::string row = table.substr(0, table.size() - 1);
  row = row.substr(row.rfind('\n') + 1);
  std::istringstream in(row);
  std::vector<std::string> cells;
  for (std::string cell; in >> cell;) cells.push_back(cell);
  return cells;
}
}  // namespace

TEST_CASE("cli: collective takes predict's link and node what-ifs and says which it applied") {
  // Two nodes of one GPU each: the all-reduce crosses one 400 Gb/s NIC per GPU, and at 1 GiB the
  // bandwidth term is all but the whole time, so twice the line rate all but halves it.
  const std::string two_nodes = "--op allreduce --bytes 1G --gpus 2 --gpus-per-node 1";
  const Json base = collective_json(two_nodes)[0], fast = collective_json(two_nodes + " --nic-Gbps 800")[0];
  CHECK(base["nodes"] == 2);
  CHECK(base["what_if"]["gpus_per_node"] == 1);
  CHECK_FALSE(base["what_if"].contains("nic_Gbps"));
  CHECK(fast["what_if"]["nic_Gbps"] == 800);
  CHECK(fast["what_if"]["label"] == "NIC 800 Gb/s, 1 GPUs/node");
  CHECK(fast["time_s"].get<double>() / base["time_s"].get<double>() == Approx(0.5).margin(0.02));
  CHECK(fast["busbw_GBps"].get<double>() / base["busbw_GBps"].get<double>() == Approx(2).margin(0.08));
  // The numbers are the library's on the cluster apply_what_if makes: one path for every command.
  dtsim::WhatIf w;
  dtsim::set_what_if_axis(w, "nic_Gbps", 800, "nic_Gbps");
  dtsim::set_what_if_axis(w, "gpus_per_node", 1, "gpus_per_node");
  const dtsim::ClusterSpec c = dtsim::apply_what_if(dtsim::load_cluster("h100-sxm"), w);
  const double library_s =
      dtsim::make_collective_algorithm("auto")->time_s(dtsim::CollectiveOp::AllReduce, 1073741824.0, dtsim::place(c, 2), c);
  CHECK(fast["time_s"].get<double>() == Approx(library_s).epsilon(1e-12));

  // --gpus-per-node changes the nodes the GPUs are placed on, in the JSON and in the table.
  CHECK(collective_json("--bytes 1M --gpus 16")[0]["nodes"] == 2);
  CHECK(collective_json("--bytes 1M --gpus 16 --gpus-per-node 4")[0]["nodes"] == 4);
  auto plain = dtsim_cli("collective --bytes 1M --gpus 16"), four = dtsim_cli("collective --bytes 1M --gpus 16 --gpus-per-node 4");
  REQUIRE(plain.code == 0);
  REQUIRE(four.code == 0);
  // As predict's table: a first line naming the what-ifs, none when there are none.
  CHECK(plain.out.rfind("what-if", 0) == std::string::npos);
  CHECK(collective_json("--bytes 1M")[0]["what_if"]["label"] == "as specified");
  CHECK(four.out.rfind("what-if: 4 GPUs/node\n", 0) == 0);
  REQUIRE(last_row_cells(plain.out).size() > 2);
  REQUIRE(last_row_cells(four.out).size() > 2);
  CHECK(last_row_cells(plain.out)[2] == "2");
  CHECK(last_row_cells(four.out)[2] == "4");

  // Each of the other axes moves the collective it reaches.
  auto time_s = [](const std::string& args) { return collective_json(args)[0]["time_s"].get<double>(); };
  CHECK(time_s("--bytes 1G --gpus 8 --intra-node-GBps 900") < 0.6 * time_s("--bytes 1G --gpus 8"));
  CHECK(time_s("--bytes 1G --gpus 8 --intra-node-bandwidth-scale 2") < 0.6 * time_s("--bytes 1G --gpus 8"));
  CHECK(time_s("--bytes 1G --gpus 16 --gpus-per-node 1 --inter-node-bandwidth-scale 2 --cluster-nodes 16") <
        0.6 * time_s("--bytes 1G --gpus 16 --gpus-per-node 1 --cluster-nodes 16"));
  CHECK(time_s("--bytes 4 --gpus 16 --latency-scale 0.5") < 0.6 * time_s("--bytes 4 --gpus 16"));
  // GPU memory bandwidth: the textbook ring's reduction reads two operands and writes one.
  CHECK(time_s("--bytes 1G --gpus 8 --algo ring --memory-bandwidth-scale 0.1") > time_s("--bytes 1G --gpus 8 --algo ring"));

  // --cluster-nodes makes room for a job a smaller node leaves no room for (h100-sxm: 128 nodes).
  CHECK(dtsim_cli("collective --bytes 1M --gpus 256 --gpus-per-node 1").code == 2);
  CHECK(collective_json("--bytes 1M --gpus 256 --gpus-per-node 1 --cluster-nodes 256")[0]["nodes"] == 256);

  // Help lists the what-ifs a collective sees, and not those it does not (FLOP/s, launch costs).
  auto help = dtsim_cli("collective --help");
  REQUIRE(help.code == 0);
  for (const char* flag : {"--gpus-per-node", "--nic-Gbps", "--inter-node-bandwidth-scale", "--intra-node-GBps", "--intra-node-bandwidth-scale",
                           "--latency-scale", "--memory-bandwidth-scale", "--cluster-nodes"}) {
    INFO(flag);
    CHECK(help.out.find(flag) != std::string::npos);
  }
  CHECK(help.out.find("--flops-scale") == std::string::npos);
  CHECK(help.out.find("--launch-overhead-scale") == std::string::npos);
}

TEST_CASE("cli: collective on faster links or lower latency is never slower, across sizes and GPU counts") {
  struct Chain {
    std::string flag;
    std::vector<std::string> values;  // each better hardware than the one before
  };
  const std::vector<Chain> chains = {{"--nic-Gbps", {"100", "400", "800"}},
                                     {"--inter-node-bandwidth-scale", {"0.5", "1", "2"}},
                                     {"--intra-node-GBps", {"100", "450", "900"}},
                                     {"--intra-node-bandwidth-scale", {"0.5", "1", "2"}},
                                     {"--latency-scale", {"2", "1", "0.5"}}};
  int compared = 0;
  std::map<std::string, int> faster;  // per flag: comparisons where the better value was faster (not vacuous)
  for (const char* algo : {"auto", "ring"})
    for (int gpus : {2, 4, 8, 16, 64})
      for (const Chain& chain : chains) {
        const std::string args = std::string("--op allreduce --bytes 4..1G:x4 --algo ") + algo + " --gpus " + std::to_string(gpus) + " " + chain.flag + " ";
        Json prev = collective_json(args + chain.values[0]);
        for (size_t i = 1; i < chain.values.size(); ++i) {
          const Json rows = collective_json(args + chain.values[i]);
          REQUIRE(rows.size() == prev.size());
          for (size_t k = 0; k < rows.size(); ++k) {
            INFO(args << chain.values[i - 1] << " -> " << chain.values[i] << ", bytes " << rows[k]["bytes"]);
            CHECK(rows[k]["time_s"].get<double>() <= prev[k]["time_s"].get<double>() * (1 + 1e-9));
            ++compared;
            faster[chain.flag] += rows[k]["time_s"].get<double>() < prev[k]["time_s"].get<double>() * (1 - 1e-6);
          }
          prev = rows;
        }
      }
  CHECK(compared == 2 * 5 * 5 * 2 * 15);
  for (const Chain& chain : chains) {
    INFO(chain.flag);
    CHECK(faster[chain.flag] > 0);
  }
}

TEST_CASE("cli: collective's what-if flags refuse bad values with one line naming the flag and the rule") {
  struct Case {
    std::string args, must_say;
  };
  const Case cases[] = {
      {"--nic-Gbps 0", "--nic-Gbps: must be in [0.001, 8000000], got 0"},
      {"--nic-Gbps fast", "--nic-Gbps: 'fast' is not a number"},
      {"--nic-Gbps 100,200", "--nic-Gbps: takes one value here"},
      {"--intra-node-GBps -5", "--intra-node-GBps: must be in [0.001, 1000000], got -5"},
      {"--intra-node-bandwidth-scale 0", "--intra-node-bandwidth-scale: must be in [0.001, 1000], got 0"},
      {"--inter-node-bandwidth-scale 2000", "--inter-node-bandwidth-scale: must be in [0.001, 1000], got 2000"},
      {"--latency-scale nan", "--latency-scale: 'nan' is not a number"},
      {"--memory-bandwidth-scale 5000", "--memory-bandwidth-scale: must be in [0.001, 1000], got 5000"},
      {"--gpus-per-node 2.5", "--gpus-per-node: must be an integer, got 2.5"},
      {"--gpus-per-node 0", "--gpus-per-node: must be in [1, 1024], got 0"},
      {"--cluster-nodes 0", "--cluster-nodes: must be in [1, "},
      {"--gpus 256 --gpus-per-node 1", "--gpus: 256 GPUs exceed cluster 'h100-sxm' (128 nodes x 1 GPUs = 128)"},
      // Not offered: FLOP/s and launch costs do not reach a collective.
      {"--flops-scale 2", "--flops-scale"},
      {"--launch-overhead-scale 2", "--launch-overhead-scale"},
  };
  for (const auto& c : cases) {
    INFO(c.args);
    auto r = dtsim_cli("collective --bytes 1M " + c.args);
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find(c.must_say) != std::string::npos);
    CHECK(r.out.empty());
  }
}

TEST_CASE("cli: --help everywhere exits 0") {
  for (const char* cmd : {"--help", "predict --help", "sweep --help", "models --help", "collective --help"}) {
    INFO(cmd);
    auto r = dtsim_cli(cmd);
    CHECK(r.code == 0);
    CHECK(r.out.find("Usage") != std::string::npos);
  }
}

TEST_CASE("cli: bad usage and bad input exit 2 with one line naming what is wrong") {
  std::string tmp = (fs::temp_directory_path() / ("dtsim_bad_" + std::to_string(::getpid()))).string();
  fs::create_directories(tmp);
  {
    std::ofstream(tmp + "/broken.json") << "{\"name\": \"x\", \"input\": ";
    std::ofstream(tmp + "/nan.json") << R"({"name":"x","input":{"channels":3,"height":8,"width":8},"layers":[{"name":"d","op":"dropout","p":2.5}]})";
  }
  struct Case {
    std::string args, must_mention;
  };
  const Case cases[] = {
      {"", "subcommand"},
      {"frobnicate", "frobnicate"},
      {"predict --model resnet50", "--batch-per-gpu"},
      {"predict --model nosuchnet --batch-per-gpu 8", "--model"},
      {"predict --model resnet50 --batch-per-gpu 0", "--batch-per-gpu"},
      {"predict --model resnet50 --batch-per-gpu abc", "--batch-per-gpu"},
      {"predict --model resnet50 --batch-per-gpu 8 --gpus 0", "--gpus"},
      {"predict --model resnet50 --batch-per-gpu 8 --gpus 1000000000", "--gpus"},
      {"predict --model resnet50 --batch-per-gpu 8 --precision fp8", "--precision"},
      {"predict --model resnet50 --batch-per-gpu 8 --format xml", "--format"},
      {"predict --model resnet50 --batch-per-gpu 8 --cluster nowhere", "--cluster"},
      {"predict --model resnet50 --batch-per-gpu 8 --algo magic", "--algo"},
      {"predict --model " + tmp + "/broken.json --batch-per-gpu 8", tmp + "/broken.json"},
      {"predict --model " + tmp + "/nan.json --batch-per-gpu 8", "$.layers[0].p"},
      {"sweep --model resnet50 --gpus 4..1 --batch-per-gpu 8", "--gpus"},
      {"sweep --model resnet50 --gpus 1 --batch-per-gpu 8,x", "--batch-per-gpu"},
      {"collective --bytes 1M --gpus 2 --op alltoall", "--op"},
      {"collective --bytes -5 --gpus 2", "--bytes"},
  };
  for (const auto& c : cases) {
    INFO(c.args);
    auto r = dtsim_cli(c.args);
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find(c.must_mention) != std::string::npos);
    CHECK(r.out.empty());
  }
  // A failed run writes no output file.
  std::string out = tmp + "/out.json";
  auto r = dtsim_cli("predict --model resnet50 --batch-per-gpu 0 --format json --out " + out);
  CHECK(r.code == 2);
  CHECK_FALSE(fs::exists(out));
  r = dtsim_cli("predict --model resnet50 --batch-per-gpu 4 --format json --out " + out);
  CHECK(r.code == 0);
  CHECK(Json::parse(slurp(out))["batch_per_gpu"] == 4);
  fs::remove_all(tmp);
}

TEST_CASE("cli: kernel --gpu takes a JSON file relative to the current directory") {
  study_test::TempDir dir("kernel_gpu");
  const std::string gpu = slurp(std::string(DTSIM_SOURCE_DIR) + "/configs/gpus/h100-sxm.json");
  dir.file("my.json", gpu);
  fs::create_directories(dir.path + "/sub");
  dir.file("sub/my.json", gpu);
  const std::string kernel = " --kind gemm --pass fwd --shape M=512,N=512,K=512 --format json";
  const std::string named = dtsim_cli("kernel --gpu h100-sxm" + kernel).out;
  REQUIRE_FALSE(named.empty());
  const std::string in_dir = "cd " + dir.path + " &&", in_source = std::string("cd ") + DTSIM_SOURCE_DIR + " &&";
  for (const auto& [where, value] : std::vector<std::pair<std::string, std::string>>{
           {in_dir, "my.json"}, {in_dir, "./my.json"}, {in_dir, "sub/my.json"}, {in_dir, "sub/../my.json"}, {in_source, "configs/gpus/h100-sxm.json"}}) {
    INFO(where + " --gpu " + value);
    auto r = study_test::run_dtsim("kernel --gpu " + value + kernel, where);
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(r.out == named);  // the same GPU as by name
  }
  // A file that is not there is named with the flag, not looked up as configs/gpus/my.json.json.
  for (const std::string value : {"missing.json", "./missing.json", "sub/missing"}) {
    auto r = study_test::run_dtsim("kernel --gpu " + value + kernel, in_dir);
    INFO(value + ": " + r.err);
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find("--gpu") != std::string::npos);
    CHECK(r.err.find(value) != std::string::npos);
  }
  auto unknown = dtsim_cli("kernel --gpu h900" + kernel);
  CHECK(unknown.code == 2);
  CHECK(unknown.err.find("--gpu: unknown GPU 'h900'") != std::string::npos);
}

TEST_CASE("cli: kernel --memory-format channels_last takes the NHWC predictor, and only for conv2d and batchnorm") {
  const std::string conv = "kernel --gpu h100-sxm --kind conv2d --pass fwd --dtype bf16 --shape N=128,C=64,H=56,W=56,K=64,R=3,S=3,pad=1 --format json";
  auto nchw = dtsim_cli(conv), nhwc = dtsim_cli(conv + " --memory-format channels_last");
  REQUIRE(nchw.code == 0);
  REQUIRE(nhwc.code == 0);
  const Json a = Json::parse(nchw.out), b = Json::parse(nhwc.out);
  CHECK_FALSE(a.contains("memory_format"));  // contiguous output as before the flag existed
  CHECK(b["memory_format"] == "channels_last");
  CHECK(b["source"] == "mlp");
  CHECK(b["time_s"].get<double>() < a["time_s"].get<double>());
  CHECK(dtsim_cli(conv + " --memory-format contiguous").out == nchw.out);
  for (const std::string bad : {"--kind gemm --pass fwd --shape M=64,N=64,K=64 --memory-format channels_last",
                                "--kind conv2d --pass fwd --shape N=1,C=8,H=8,W=8,K=8,R=1,S=1 --memory-format nhwc"}) {
    auto r = dtsim_cli("kernel --gpu h100-sxm " + bad);
    INFO(bad + ": " + r.err);
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find("--memory-format") != std::string::npos);
  }
}

TEST_CASE("cli: strategy parameters given as 0 or less are refused, not replaced by defaults") {
  const std::string base = "--model resnet18 --batch-per-gpu 8 --gpus 16";
  struct Case {
    std::string flags, flag, rule;
  };
  const Case cases[] = {
      {"--strategy daso --global-skip 0", "--global-skip", "must be at least 1, got 0"},
      {"--strategy daso --global-skip -2", "--global-skip", "must be at least 1, got -2"},
      {"--strategy daso --batches-to-wait -1", "--batches-to-wait", "must be at least 0, got -1"},
      {"--strategy easgd-sync --tau 0", "--tau", "must be at least 1, got 0"},
      {"--strategy local-sgd --tau 0", "--tau", "must be at least 1, got 0"},
      {"--strategy ps --servers 0", "--servers", "must be at least 1, got 0"},
      {"--strategy grid --pr 0", "--pr", "must be at least 1, got 0"},
      {"--strategy grid --pc 0", "--pc", "must be at least 1, got 0"},
      {"--cluster-nodes 0", "--cluster-nodes", "must be in [1, 1048576]"},
  };
  for (const auto& c : cases)
    for (const char* cmd : {"predict", "sweep"}) {
      if (c.flag == "--cluster-nodes" && std::string(cmd) == "sweep") continue;  // sweep refused it already
      INFO(cmd << " " << c.flags);
      auto r = dtsim_cli(std::string(cmd) + " " + base + " " + c.flags);
      INFO(r.err);
      CHECK(r.code == 2);
      CHECK(lines(r.err) == 1);
      CHECK(r.err.find(c.flag + ": " + c.rule) != std::string::npos);
      CHECK(r.out.empty());
    }
  // calibrate --gpus 0 is refused too, not taken for "the log says".
  auto cal = dtsim_cli("calibrate --measured " + std::string(DTSIM_SOURCE_DIR) + "/validation/data/h100-sxm/collective/allreduce_2gpu.json --gpus 0");
  CHECK(cal.code == 2);
  CHECK(lines(cal.err) == 1);
  CHECK(cal.err.find("--gpus: must be at least 1, got 0") != std::string::npos);
  // The smallest accepted values run, and --batches-to-wait 0 (no waiting) is a value, not a default.
  for (const char* ok : {"--strategy daso --global-skip 1 --batches-to-wait 0", "--strategy easgd-sync --tau 1", "--strategy ps --servers 1",
                         "--strategy grid --pr 1", "--cluster-nodes 2"}) {
    INFO(ok);
    CHECK(dtsim_cli("predict " + base + " " + ok).code == 0);
  }
}

TEST_CASE("cli: CSV and JSON carry plain numbers, tables keep human units") {
  auto csv = dtsim_cli("models --format csv");
  REQUIRE(csv.code == 0);
  CHECK(csv.out.find("alexnet,61100840,714188480,23,") != std::string::npos);
  auto table = dtsim_cli("models");
  CHECK(table.out.find("714.19M") != std::string::npos);
  // Every numeric column of the CSV outputs is a number a CSV reader parses: no unit suffix.
  auto cells_are_numbers = [](const std::string& text, const std::vector<std::string>& columns) {
    std::istringstream in(text);
    std::string header, line;
    std::getline(in, header);
    std::vector<std::string> names;
    std::stringstream hs(header);
    for (std::string h; std::getline(hs, h, ',');) names.push_back(h);
    int rows = 0;
    while (std::getline(in, line)) {
      std::vector<std::string> cells;
      std::stringstream ls(line);
      for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
      for (const auto& col : columns) {
        auto it = std::find(names.begin(), names.end(), col);
        REQUIRE(it != names.end());
        const std::string& cell = cells.at(it - names.begin());
        INFO(col << " = " << cell);
        size_t used = 0;
        CHECK_NOTHROW(std::stod(cell, &used));
        CHECK(used == cell.size());
      }
      ++rows;
    }
    return rows;
  };
  CHECK(cells_are_numbers(csv.out, {"params", "fwd MACs/sample", "layers"}) == 22);
  auto roof = dtsim_cli("roofline --model resnet18 --batch-per-gpu 32 --format csv");
  REQUIRE(roof.code == 0);
  CHECK(cells_are_numbers(roof.out, {"flops", "bytes", "intensity_flops_per_byte", "time_s", "attained_flops_per_s"}) > 100);
  // Counts are whole numbers, written out in full (not 1.88822e+09).
  {
    std::istringstream in(roof.out);
    std::string line;
    std::getline(in, line);
    REQUIRE(line.rfind("layer,kind,pass,math,flops,bytes,", 0) == 0);
    while (std::getline(in, line)) {
      std::vector<std::string> cells;
      std::stringstream ls(line);
      for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
      REQUIRE(cells.size() >= 6);
      for (int col : {4, 5}) {
        INFO(line);
        CHECK(cells[col].find_first_not_of("0123456789") == std::string::npos);
      }
    }
  }
  auto pred = dtsim_cli("predict --model resnet50 --batch-per-gpu 64 --gpus 16 --format csv");
  REQUIRE(pred.code == 0);
  CHECK(cells_are_numbers(pred.out, {"iteration_s", "throughput_samples_per_s", "memory_device_bytes"}) == 1);
  const Json j = Json::parse(dtsim_cli("predict --model resnet50 --batch-per-gpu 64 --gpus 16 --format json").out);
  CHECK(pred.out.find("," + std::to_string(std::llround(j["memory"]["device_bytes"].get<double>())) + ",") != std::string::npos);
}

TEST_CASE("cli: help lists every registered strategy and framework profile") {
  auto help = dtsim_cli("predict --help");
  REQUIRE(help.code == 0);
  // CLI11 wraps long descriptions: compare with the line breaks and indentation taken out.
  std::string flat;
  for (char c : help.out) flat += (c == '\n') ? ' ' : c;
  std::string squeezed;
  for (char c : flat)
    if (!(c == ' ' && !squeezed.empty() && squeezed.back() == ' ')) squeezed += c;
  for (const auto& n : dtsim::strategy_names()) {
    INFO(n);
    CHECK((squeezed.find(" " + n + ",") != std::string::npos || squeezed.find(" " + n + " ") != std::string::npos));
  }
  for (const auto& f : dtsim::framework_presets()) {
    INFO(f);
    CHECK(squeezed.find(f) != std::string::npos);
  }
  CHECK(squeezed.find("hierarchical-leader") != std::string::npos);
  CHECK(squeezed.find("local-sgd") != std::string::npos);
  CHECK(squeezed.find("pytorch-ops") != std::string::npos);
  for (const char* cmd : {"sweep --help", "validate --help", "grid --help"}) {
    INFO(cmd);
    CHECK(dtsim_cli(cmd).out.find("pytorch-ops") != std::string::npos);
  }
}
