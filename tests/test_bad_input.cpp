// Bad input, table-driven: each documented input (model JSON, cluster spec, sweep file, measured
// run) is mutated one field at a time (unknown fields, wrong types, missing fields, zero and negative
// counts, infinities, absurd sizes) and fed to the real dtsim binary with --out. Every case must exit
// 2 with exactly one line on stderr naming the file and the JSON path, and write no output file.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "study_cli.hpp"

using dtsim::Json;
namespace fs = std::filesystem;

namespace {

using study_test::Run;
using study_test::run_dtsim;

// A mutation: set (or, with erase, remove) the value at a JSON pointer; the error must name `path`.
struct Mutation {
  std::string pointer;
  Json value;
  std::string path;  // the JSON path the one-line error must contain
  bool erase = false;
};

Mutation set(const std::string& pointer, Json value, const std::string& path) { return {pointer, std::move(value), path, false}; }
Mutation drop(const std::string& pointer, const std::string& path) { return {pointer, nullptr, path, true}; }

class Scratch {
 public:
  explicit Scratch(const std::string& tag)
      : dir_((fs::temp_directory_path() / ("dtsim_badinput_" + tag + "_" + std::to_string(::getpid()))).string()) {
    fs::create_directories(dir_);
  }
  ~Scratch() { fs::remove_all(dir_); }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

// Writes each mutated document, runs `args_of(file, out)` and checks the contract.
template <class Args>
void check_mutations(const std::string& tag, const Json& base, const std::vector<Mutation>& mutations, Args args_of) {
  Scratch s(tag);
  // The unmutated document runs (so a failure below is the mutation's).
  {
    const std::string file = s.dir() + "/base.json", out = s.dir() + "/base.out";
    std::ofstream(file) << base.dump(2);
    Run r = run_dtsim(args_of(file, out));
    INFO(r.err);
    REQUIRE(r.code == 0);
    REQUIRE(fs::exists(out));
  }
  int i = 0;
  for (const auto& m : mutations) {
    Json doc = base;
    const Json::json_pointer ptr(m.pointer);
    if (m.erase) doc[ptr.parent_pointer()].erase(ptr.back());
    else doc[ptr] = m.value;
    const std::string file = s.dir() + "/case" + std::to_string(i++) + ".json", out = file + ".out";
    std::string text = doc.dump(2), must_name = m.path;
    if (!m.erase && m.value.is_string() && m.value.get<std::string>().rfind("raw:", 0) == 0) {
      // A literal JSON cannot hold (an overflowing number): replace the quoted marker by the raw text.
      // The JSON reader refuses it before any path exists, so the error names the text instead.
      const std::string marker = m.value.dump(), raw = m.value.get<std::string>().substr(4);
      text.replace(text.find(marker), marker.size(), raw);
      must_name = raw;
    }
    std::ofstream(file) << text;
    Run r = run_dtsim(args_of(file, out));
    INFO(tag << ": " << (m.erase ? "drop " : "set ") << m.pointer << (m.erase ? "" : " = " + m.value.dump()));
    INFO("stderr: " << r.err);
    CHECK(r.code == 2);
    CHECK(study_test::lines(r.err) == 1);
    CHECK(r.err.find(file) != std::string::npos);
    CHECK(r.err.find(must_name) != std::string::npos);
    CHECK(r.out.empty());
    CHECK_FALSE(fs::exists(out));
  }
}

// Mutations every numeric field should refuse: wrong type, infinity, absurd.
void numeric_field(std::vector<Mutation>& v, const std::string& pointer, const std::string& path, bool integer, Json absurd) {
  v.push_back(set(pointer, "8", path));
  v.push_back(set(pointer, nullptr, path));
  v.push_back(set(pointer, Json::array({1}), path));
  v.push_back(set(pointer, -1, path));
  v.push_back(set(pointer, "raw:1e999", path));  // parses as infinity
  v.push_back(set(pointer, "raw:-1e999", path));
  v.push_back(set(pointer, std::move(absurd), path));
  if (integer) v.push_back(set(pointer, 1.5, path));
}

const std::string kSource = DTSIM_SOURCE_DIR;
const std::string kTiny = std::string(DTSIM_TEST_DATA) + "/tiny.json";

}  // namespace

TEST_CASE("bad input: model JSON") {
  const Json base = dtsim::load_json_file(kTiny);
  std::vector<Mutation> m = {
      set("/extra", 1, "$.extra"),
      set("/layers/0/out_chanels", 16, "$.layers[0].out_chanels"),
      set("/input/depth", 3, "$.input.depth"),
      drop("/name", "$.name"),
      drop("/input", "$.input"),
      drop("/layers", "$.layers"),
      drop("/layers/0/out_channels", "$.layers[0].out_channels"),
      drop("/layers/0/kernel", "$.layers[0].kernel"),
      set("/name", 5, "$.name"),
      set("/layers", Json::object(), "$.layers"),
      set("/layers", Json::array(), "$.layers"),
      set("/layers/0", 7, "$.layers[0]"),
      set("/layers/0/op", "conv3d", "$.layers[0].op"),
      set("/layers/0/bias", "no", "$.layers[0].bias"),
      set("/layers/0/kernel", Json::array({3}), "$.layers[0].kernel"),
      set("/layers/0/kernel", Json::array({3, 3, 3}), "$.layers[0].kernel"),
      set("/layers/0/kernel", 0, "$.layers[0].kernel"),
      set("/layers/0/stride", 0, "$.layers[0].stride"),
      set("/layers/0/padding", -1, "$.layers[0].padding"),
      set("/layers/0/groups", 0, "$.layers[0].groups"),
      set("/layers/0/groups", 5, "$.layers[0]"),
      set("/layers/0/kernel", 1000, "$.layers[0]"),
      set("/layers/5/inputs", Json::array({"bn2", "nowhere"}), "$.layers[5].inputs"),
      set("/layers/5/inputs", Json::array(), "$.layers[5].inputs"),
      set("/layers/13/p", 1.5, "$.layers[13].p"),
      set("/layers/13/p", "half", "$.layers[13].p"),
      set("/layers/1/eps", -1, "$.layers[1].eps"),
  };
  numeric_field(m, "/input/channels", "$.input.channels", true, 1e12);
  numeric_field(m, "/input/height", "$.input.height", true, int64_t(1) << 40);
  numeric_field(m, "/layers/0/out_channels", "$.layers[0].out_channels", true, int64_t(1) << 40);
  numeric_field(m, "/layers/14/out_features", "$.layers[14].out_features", true, int64_t(1) << 40);
  m.push_back(set("/input/channels", 0, "$.input.channels"));
  m.push_back(set("/layers/14/out_features", 0, "$.layers[14].out_features"));
  check_mutations("model", base, m, [](const std::string& f, const std::string& out) {
    return "predict --model " + f + " --batch-per-gpu 8 --gpus 2 --format json --out " + out;
  });
}

TEST_CASE("bad input: model JSON whose sizes multiply beyond any GPU") {
  // Each dimension within its own bound, their product not: refused, not overflowed.
  Json doc = dtsim::load_json_file(kTiny);
  doc["input"] = {{"channels", 1 << 20}, {"height", 1 << 20}, {"width", 1 << 20}};
  std::vector<Mutation> m = {set("/input", doc["input"], "$.")};
  check_mutations("model_product", dtsim::load_json_file(kTiny), m, [](const std::string& f, const std::string& out) {
    return "predict --model " + f + " --batch-per-gpu 8 --out " + out;
  });
}

TEST_CASE("bad input: cluster spec") {
  const Json base = dtsim::load_json_file(kSource + "/configs/clusters/h100-sxm.json");
  std::vector<Mutation> m = {
      set("/extra", 1, "$.extra"),
      set("/intra_node/bandwith_GBps", 1, "$.intra_node.bandwith_GBps"),
      set("/collectives/nccl/chanels", 4, "$.collectives.nccl.chanels"),
      drop("/name", "$.name"),
      drop("/gpus_per_node", "$.gpus_per_node"),
      drop("/intra_node", "$.intra_node"),
      drop("/inter_node/nic_bandwidth_Gbps", "$.inter_node.nic_bandwidth_Gbps"),
      drop("/framework/bucket_MiB", "$.framework.bucket_MiB"),
      set("/gpu", "h900", "$.gpu"),
      set("/gpu", std::string(300, 'g'), "$.gpu"),  // longer than a file name may be
      set("/gpu", 5, "$.gpu"),
      set("/intra_node/kind", "carrier-pigeon", "$.intra_node.kind"),
      set("/intra_node/bandwidth_GBps", 0, "$.intra_node.bandwidth_GBps"),
      set("/inter_node/oversubscription", 0.5, "$.inter_node.oversubscription"),
      set("/collectives/nccl/channels", 0, "$.collectives.nccl.channels"),
      set("/collectives/nccl/algo_bandwidth/ring", 0, "$.collectives.nccl.algo_bandwidth.ring"),
      set("/collectives/nccl/enabled", {{"ring", Json::array()}, {"tree", Json::array()}}, "$.collectives.nccl.enabled"),
      set("/collectives/nccl/enabled/ring", Json::array({"LL", "Fast"}), "$.collectives.nccl.enabled.ring"),
      set("/framework/overlap", 1, "$.framework.overlap"),
      set("/framework/launch_overhead_s", -1e-6, "$.framework.launch_overhead_s"),
  };
  numeric_field(m, "/gpus_per_node", "$.gpus_per_node", true, 1000000000);
  numeric_field(m, "/nodes", "$.nodes", true, 1000000000);
  numeric_field(m, "/inter_node/nics_per_node", "$.inter_node.nics_per_node", true, 1000000);
  numeric_field(m, "/intra_node/bandwidth_GBps", "$.intra_node.bandwidth_GBps", false, 1e300);
  numeric_field(m, "/inter_node/latency_s", "$.inter_node.latency_s", false, 1e9);
  numeric_field(m, "/framework/bucket_MiB", "$.framework.bucket_MiB", false, 1e300);
  m.push_back(set("/gpus_per_node", 0, "$.gpus_per_node"));
  m.push_back(set("/nodes", 0, "$.nodes"));
  check_mutations("cluster", base, m, [](const std::string& f, const std::string& out) {
    return "predict --model " + kTiny + " --cluster " + f + " --batch-per-gpu 8 --gpus 16 --format csv --out " + out;
  });
}

TEST_CASE("bad input: sweep file") {
  const Json base = {{"name", "bad-input"},       {"models", {kTiny}},           {"cluster", "h100-sxm"},
                     {"batch_per_gpu", {8, 16}},  {"gpus", "1..4:x2"},           {"what_if", {{"flops_scale", {1, 2}}}},
                     {"training", {{"dataset_size", 1000}, {"epochs", 2}}}};
  std::vector<Mutation> m = {
      set("/extra", 1, "$.extra"),
      set("/what_if/flops_scales", 2, "$.what_if.flops_scales"),
      set("/training/epoch", 2, "$.training.epoch"),
      drop("/name", "$.name"),
      drop("/models", "$.models"),
      drop("/batch_per_gpu", "$.batch_per_gpu"),
      drop("/gpus", "$.gpus"),
      set("/nodes", Json::array({1}), "$.nodes"),
      set("/name", "", "$.name"),
      set("/models", Json::array(), "$.models"),
      set("/models/0", 3, "$.models[0]"),
      set("/models/0", "nosuchnet", "$.models[0]"),
      set("/cluster", "nowhere", "$.cluster"),
      // Names longer than a file name may be (found by fuzz_sweep): unknown, not a filesystem_error.
      set("/models/0", std::string(300, 'm'), "$.models[0]"),
      set("/cluster", std::string(300, 'c'), "$.cluster"),
      set("/framework", std::string(300, 'f'), "$.framework"),
      set("/precision", "fp8", "$.precision"),
      set("/algo", "magic", "$.algo"),
      set("/overlap", "yes", "$.overlap"),
      set("/batch_per_gpu", Json::array(), "$.batch_per_gpu"),
      set("/batch_per_gpu", Json::array({0}), "$.batch_per_gpu[0]"),
      set("/batch_per_gpu", Json::array({8, -4}), "$.batch_per_gpu[1]"),
      set("/batch_per_gpu", Json::array({8.5}), "$.batch_per_gpu[0]"),
      set("/batch_per_gpu", Json::array({"8"}), "$.batch_per_gpu[0]"),
      set("/batch_per_gpu", "0..4", "$.batch_per_gpu"),
      set("/batch_per_gpu", 8, "$.batch_per_gpu"),
      set("/gpus", Json::array({1000000000}), "$.gpus"),
      set("/gpus", "1..1G:x2", "$.gpus"),
      set("/gpus", Json::array({0}), "$.gpus[0]"),
      set("/gpus", "4..1", "$.gpus"),
      set("/gpus", Json::array({2048}), "$.gpus"),  // beyond the preset's 1024 GPUs
      set("/cluster_nodes", 0, "$.cluster_nodes"),
      set("/cluster_nodes", 1e9, "$.cluster_nodes"),
      set("/what_if/flops_scale", Json::array({1, 0}), "$.what_if.flops_scale"),
      set("/what_if/flops_scale", Json::array({1, -2}), "$.what_if.flops_scale"),
      set("/what_if/flops_scale", "x", "$.what_if.flops_scale"),
      set("/what_if/flops_scale", "raw:1e999", "$.what_if.flops_scale"),
      set("/what_if/flops_scale", Json::array({1, 1e300}), "$.what_if.flops_scale"),
      set("/scenarios", Json::array({Json::object()}), "$.scenarios[0].name"),
      set("/scenarios", Json::array({{{"name", "a"}, {"nic_Gbps", 0}}}), "$.scenarios[0].nic_Gbps"),
      set("/scenarios", Json::array({{{"name", "a"}, {"flops_scale", "2"}}}), "$.scenarios[0].flops_scale"),
      set("/scenarios", Json::array({{{"name", "a"}, {"colour", 2}}}), "$.scenarios[0].colour"),
      set("/training/dataset_size", 0, "$.training.dataset_size"),
      set("/training/epochs", 0, "$.training.epochs"),
      set("/training/epochs", -1, "$.training.epochs"),
      set("/training/epochs", "raw:1e999", "$.training.epochs"),
      drop("/training/epochs", "$.training"),
      set("/training/price_per_gpu_hour", -2, "$.training.price_per_gpu_hour"),
  };
  check_mutations("sweep", base, m, [](const std::string& f, const std::string& out) {
    return "sweep --sweep " + f + " --format csv --out " + out;
  });
}

TEST_CASE("bad input: measured run") {
  const Json base = dtsim::load_json_file(kSource + "/validation/data/h200-sxm/pytorch/vgg16_b16_1gpu_fp32.json");
  std::vector<Mutation> m = {
      set("/extra", 1, "$.extra"),
      set("/iteration_time_s/medain", 0.01, "$.iteration_time_s.medain"),
      set("/ddp/bucket_size", 1, "$.ddp.bucket_size"),
      drop("/schema", "$.schema"),
      drop("/model", "$.model"),
      drop("/gpus", "$.gpus"),
      drop("/iteration_time_s", "$.iteration_time_s"),
      drop("/iteration_time_s/median", "$.iteration_time_s.median"),
      drop("/provenance", "$.provenance"),
      drop("/provenance/gpu/name", "$.provenance.gpu.name"),
      set("/schema", "dtsim-measured-run/2", "$.schema"),
      set("/framework", "jax", "$.framework"),
      set("/model", "nosuchnet", "$.model"),
      set("/precision", "fp8", "$.precision"),
      set("/provenance/gpu/name", "Voodoo 2", "$.provenance.gpu.name"),
      set("/iteration_time_s/median", 0, "$.iteration_time_s.median"),
      set("/iteration_time_s/p10", 1.0, "$.iteration_time_s.p10"),
      set("/iteration_time_s/p90", 0.001, "$.iteration_time_s.p90"),
      set("/ddp/overlap", "yes", "$.ddp.overlap"),
      set("/ddp/bucket_bytes", 0, "$.ddp.bucket_bytes"),
      set("/layers", Json::object(), "$.layers"),
      set("/layers", Json::array({{{"name", "x"}, {"pass", "fwd"}}}), "$.layers[0].time_s"),
      set("/layers", Json::array({{{"name", "x"}, {"pass", "fwd"}, {"time_s", -1}}}), "$.layers[0].time_s"),
      set("/layers", Json::array({{{"name", "x"}, {"pass", 3}, {"time_s", 1e-3}}}), "$.layers[0].pass"),
      set("/layers", Json::array({{{"name", "x"}, {"pass", "fwd"}, {"time_s", 1e-3}, {"colour", 1}}}), "$.layers[0].colour"),
  };
  numeric_field(m, "/gpus", "$.gpus", true, 1000000000);
  numeric_field(m, "/batch_per_gpu", "$.batch_per_gpu", true, int64_t(1) << 40);
  numeric_field(m, "/iteration_time_s/median", "$.iteration_time_s.median", false, 1e300);
  m.push_back(set("/gpus", 0, "$.gpus"));
  m.push_back(set("/batch_per_gpu", 0, "$.batch_per_gpu"));
  check_mutations("measured", base, m, [](const std::string& f, const std::string& out) {
    return "validate --measured " + f + " --format json --out " + out;
  });
}

TEST_CASE("bad input: not JSON, not an object, empty, truncated") {
  Scratch s("syntax");
  const std::string out = s.dir() + "/out.txt";
  const std::vector<std::string> docs = {"", "   ", "[]", "42", "\"model\"", "{\"name\": \"x\",", "{\"a\": NaN}", "{\"a\": Infinity}",
                                         "{\"a\": 1e999999}", std::string("{\"name\":\"\xff\"}"), std::string("{\"a\":\0}", 7)};
  int i = 0;
  for (const auto& d : docs) {
    const std::string file = s.dir() + "/doc" + std::to_string(i++) + ".json";
    std::ofstream(file, std::ios::binary) << d;
    for (const std::string& args : {"predict --batch-per-gpu 8 --model " + file, "predict --batch-per-gpu 8 --model " + kTiny + " --cluster " + file,
                                    "sweep --sweep " + file, "validate --measured " + file}) {
      INFO(args << " on document " << i - 1);
      Run r = run_dtsim(args + " --out " + out);
      INFO("stderr: " << r.err);
      CHECK(r.code == 2);
      CHECK(study_test::lines(r.err) == 1);
      CHECK(r.err.find(file) != std::string::npos);
      CHECK_FALSE(fs::exists(out));
    }
  }
}

TEST_CASE("bad input: a duplicate key in any strictly read JSON names the file, the JSON path and the key") {
  Scratch s("duplicate");
  struct Case {
    std::string tag, base_file, marker, duplicate, path, key;
    std::string (*args)(const std::string& file, const std::string& out);
  };
  // Each document is the committed one with a second copy of a key inserted after `marker`, so that
  // the JSON stays valid and only the repetition is wrong.
  const Case cases[] = {
      {"cluster", kSource + "/configs/clusters/h100-sxm.json", "\"intra_node\": {", "\"bandwidth_GBps\": 1, ", "$.intra_node.bandwidth_GBps",
       "bandwidth_GBps",
       [](const std::string& f, const std::string& out) { return "predict --model " + kTiny + " --cluster " + f + " --batch-per-gpu 8 --out " + out; }},
      {"cluster_top", kSource + "/configs/clusters/h100-sxm.json", "{", "\"nodes\": 1, ", "$.nodes", "nodes",
       [](const std::string& f, const std::string& out) { return "predict --model " + kTiny + " --cluster " + f + " --batch-per-gpu 8 --out " + out; }},
      {"gpu", kSource + "/configs/gpus/h100-sxm.json", "\"peak_tflops\": {", "\"fp16\": 1, ", "$.peak_tflops.fp16", "fp16",
       [](const std::string& f, const std::string&) { return "kernel --gpu " + f + " --kind gemm --pass fwd --shape M=64,N=64,K=64"; }},
      {"model", kTiny, "\"layers\": [\n    {", "\"name\": \"again\", ", "$.layers[0].name", "name",
       [](const std::string& f, const std::string& out) { return "predict --model " + f + " --batch-per-gpu 8 --out " + out; }},
      {"sweep", kSource + "/configs/sweeps/scaling-study.json", "{", "\"name\": \"again\", ", "$.name", "name",
       [](const std::string& f, const std::string& out) { return "sweep --sweep " + f + " --format csv --out " + out; }},
      {"measured", kSource + "/validation/data/h200-sxm/pytorch/vgg16_b16_1gpu_fp32.json", "\"iteration_time_s\": {", "\"median\": 1, ",
       "$.iteration_time_s.median", "median",
       [](const std::string& f, const std::string& out) { return "validate --measured " + f + " --format json --out " + out; }},
  };
  for (const auto& c : cases) {
    INFO(c.tag);
    std::string text = dtsim::load_json_file(c.base_file).dump(2);
    const size_t at = text.find(c.marker);
    REQUIRE(at != std::string::npos);
    text.insert(at + c.marker.size(), c.duplicate);
    const std::string file = s.dir() + "/" + c.tag + ".json", out = file + ".out";
    {
      // The key really is doubled: a reader that keeps either copy accepts the text.
      std::ofstream(file) << text;
      const Json either = Json::parse(text);
      CHECK_FALSE(either.is_discarded());
    }
    Run r = run_dtsim(c.args(file, out));
    INFO("stderr: " << r.err);
    CHECK(r.code == 2);
    CHECK(study_test::lines(r.err) == 1);
    CHECK(r.err.find(file + ": " + c.path + ": duplicate key '" + c.key + "'") != std::string::npos);
    CHECK(r.out.empty());
    CHECK_FALSE(fs::exists(out));
  }
  // Inside arrays the path carries the index; equal keys in different objects are fine.
  const std::string nested = s.dir() + "/nested.json";
  std::ofstream(nested) << R"({"a": [1, {"b": 2, "c": [3, {"d": 1, "e": {"d": 0}, "d": 2}]}], "b": {"b": 1}})";
  try {
    dtsim::load_json_file(nested);
    FAIL("no error");
  } catch (const dtsim::InputError& e) {
    CHECK(e.where() == nested + ": $.a[1].c[1].d");
    CHECK(e.rule().find("duplicate key 'd'") != std::string::npos);
  }
  std::ofstream(nested) << R"({"a": [{"d": 1}, {"d": 2}], "d": {"d": [1, 2]}})";
  CHECK_NOTHROW(dtsim::load_json_file(nested));
}

TEST_CASE("bad input: numbers in messages print as integers when integral") {
  struct Case {
    std::string args, must_say;
  };
  const Case cases[] = {
      {"predict --model resnet18 --batch-per-gpu 8 --gpus-per-node 2000", "--gpus-per-node: must be in [1, 1024], got 2000"},
      {"predict --model resnet18 --batch-per-gpu 8 --gpus-per-node 2.5", "must be an integer, got 2.5"},
      {"predict --model resnet18 --batch-per-gpu 8 --nic-Gbps 1e9", "--nic-Gbps: must be in [0.001, 8000000], got 1000000000"},
      {"predict --model resnet18 --batch-per-gpu 8 --flops-scale 5000", "--flops-scale: must be in [0.001, 1000], got 5000"},
      {"sweep --model resnet18 --batch-per-gpu 8 --flops-scale 1,2,5000e9", "--flops-scale: must be in [0.001, 1000], got 5000000000000"},
  };
  for (const auto& c : cases) {
    INFO(c.args);
    Run r = run_dtsim(c.args);
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK(study_test::lines(r.err) == 1);
    CHECK(r.err.find(c.must_say) != std::string::npos);
    CHECK(r.err.find("e+") == std::string::npos);
  }
  // The strict JSON reader's bounds as well.
  Scratch s("numbers");
  Json cluster = dtsim::load_json_file(kSource + "/configs/clusters/h100-sxm.json");
  cluster["framework"]["bucket_MiB"] = -1;
  const std::string file = s.dir() + "/c.json";
  std::ofstream(file) << cluster.dump(2);
  Run r = run_dtsim("predict --model " + kTiny + " --cluster " + file + " --batch-per-gpu 8");
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK(r.err.find("e+") == std::string::npos);
  CHECK(r.err.find("got -1") != std::string::npos);
}
