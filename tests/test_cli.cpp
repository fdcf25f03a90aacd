// The command-line contract that scripts rely on, run against the real binary.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "study_cli.hpp"

#include "common/json_util.hpp"

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
  CHECK(j.size() == 13);
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
  auto roof = Json::parse(dtsim_cli("sweep --model resnet50 --gpus 1 --batch-per-gpu 32 --format json --compute-model roofline").out);
  auto mlp = Json::parse(dtsim_cli("sweep --model resnet50 --gpus 1 --batch-per-gpu 32 --format json --compute-model auto").out);
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
