// Every flag a command lists in its --help either changes its output against a base run or is refused
// (exit 2, one line). A flag without a value here fails the test, so that a new flag gets one.
#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <set>
#include <string>

#include "study_cli.hpp"

using study_test::run_dtsim;

namespace {

struct Walk {
  std::string base;                          // the command and the flags it needs
  std::map<std::string, std::string> value;  // a value other than the default, per flag
  // Flags that leave stdout as it is for this base, each for a reason given beside it.
  std::map<std::string, std::string> same;
};

// The flags of `command --help`, in order.
std::vector<std::string> flags_of(const std::string& command) {
  const auto h = run_dtsim(command + " --help");
  std::vector<std::string> out;
  const std::regex flag(R"(^\s+(?:-\w,)?(--[A-Za-z0-9-]+))");
  std::istringstream in(h.out);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, flag) && m[1] != "--help" && m[1] != "--help-all") out.push_back(m[1]);
  }
  return out;
}

// `base` with `flag value`: a flag the base already gives has its value replaced.
std::string with(const std::string& base, const std::string& flag, const std::string& value) {
  const size_t at = base.find(" " + flag + " ");
  if (at == std::string::npos) return base + " " + flag + (value.empty() ? "" : " " + value);
  const size_t end = base.find(' ', at + flag.size() + 2);
  return base.substr(0, at) + " " + flag + " " + value + (end == std::string::npos ? "" : base.substr(end));
}

void walk(const Walk& w) {
  const std::string command = w.base.substr(0, w.base.find(' '));
  const auto flags = flags_of(command);
  REQUIRE(!flags.empty());
  const auto base = run_dtsim(w.base);
  REQUIRE(base.code == 0);
  for (const auto& f : flags) {
    INFO(command << " " << f);
    const auto v = w.value.find(f);
    REQUIRE(v != w.value.end());
    const auto r = run_dtsim(with(w.base, f, v->second));
    INFO(r.err);
    if (w.same.count(f)) {
      CHECK(r.code == 0);
      CHECK(r.out == base.out);
      continue;
    }
    const bool changed = r.code == 0 && r.out != base.out;
    const bool refused = r.code == 2 && study_test::lines(r.err) == 1 && r.out.empty();
    CHECK((changed || refused));
  }
}

const std::string kTmp = "/tmp/dtsim_flag_walk_" + std::to_string(::getpid());

}  // namespace

TEST_CASE("flag walk: every flag of predict changes its answer or is refused") {
  walk({"predict --model resnet50 --batch-per-gpu 64 --gpus 16",
        {{"--model", "vgg16"}, {"--gpus", "8"}, {"--batch-per-gpu", "32"}, {"--layers", ""}, {"--trace", kTmp + ".json"},
         {"--cluster-nodes", "1"}, {"--bucket-mb", "5"}, {"--cluster", "a100-sxm"}, {"--precision", "bf16"},
         {"--memory-format", "channels_last"}, {"--optimizer", "adamw"}, {"--execution", "cuda-graphs"}, {"--algo", "tree"},
         {"--compute-model", "roofline"}, {"--framework", "harness"}, {"--no-overlap", ""}, {"--strategy", "hierarchical"},
         {"--global-skip", "2"}, {"--batches-to-wait", "2"}, {"--tau", "2"}, {"--servers", "2"}, {"--pr", "2"}, {"--pc", "2"},
         {"--domain", ""}, {"--format", "json"}, {"--out", kTmp + ".txt"}, {"--allow-unknown-ops", ""}, {"--seq-len", "64"},
         {"--flops-scale", "2"}, {"--memory-bandwidth-scale", "2"}, {"--intra-node-GBps", "10"}, {"--intra-node-bandwidth-scale", "0.5"},
         {"--nic-Gbps", "10"}, {"--inter-node-bandwidth-scale", "0.5"}, {"--latency-scale", "10"}, {"--launch-overhead-scale", "10"},
         {"--gpus-per-node", "4"}, {"--dataset-size", "1000000"}, {"--epochs", "1"}, {"--price-per-gpu-hour", "2"},
         {"--grad-accum-steps", "4"}, {"--activation-checkpointing", ""}, {"--shard", "hybrid"}},
        {{"--trace", "writes the trace file; stdout stays the prediction (test_study_trace checks the file)"},
         {"--allow-unknown-ops", "a zoo model has no operator dtsim does not know (test_onnx_cli checks it on ONNX files)"}}});
}

TEST_CASE("flag walk: every flag of roofline changes its answer or is refused") {
  walk({"roofline --model resnet50 --batch-per-gpu 64",
        {{"--model", "vgg16"}, {"--batch-per-gpu", "32"}, {"--cluster", "a100-sxm"}, {"--precision", "bf16"},
         {"--memory-format", "channels_last"}, {"--optimizer", "adamw"}, {"--execution", "compile"}, {"--plot", kTmp + ".png"},
         {"--compute-model", "roofline"}, {"--format", "json"}, {"--out", kTmp + ".txt"}, {"--allow-unknown-ops", ""}, {"--seq-len", "64"},
         {"--flops-scale", "2"}, {"--memory-bandwidth-scale", "2"}, {"--intra-node-GBps", "10"}, {"--intra-node-bandwidth-scale", "0.5"},
         {"--nic-Gbps", "10"}, {"--inter-node-bandwidth-scale", "0.5"}, {"--latency-scale", "10"}, {"--launch-overhead-scale", "10"},
         {"--gpus-per-node", "4"}},
        {{"--plot", "draws the PNG; stdout stays the table (test_study_plot checks the file)"},
         {"--allow-unknown-ops", "a zoo model has no operator dtsim does not know"}}});
}

TEST_CASE("flag walk: every flag of kernel changes its answer or is refused") {
  walk({"kernel --gpu h100-sxm --kind conv2d --pass fwd --shape N=32,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1",
        {{"--gpu", "a100-sxm"}, {"--kind", "gemm"}, {"--pass", "bwd_data"}, {"--precision", "bf16"},
         {"--shape", "N=64,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1"}, {"--variant", "native_depthwise"}, {"--framework", "pytorch"},
         {"--memory-format", "channels_last"}, {"--compute-model", "roofline"}, {"--format", "json"}, {"--out", kTmp + ".txt"}},
        {}});
}

TEST_CASE("flag walk: every flag of collective changes its answer or is refused") {
  walk({"collective --op allreduce --bytes 64M --gpus 16",
        {{"--op", "allgather"}, {"--bytes", "1G"}, {"--gpus", "8"}, {"--cluster", "a100-sxm"}, {"--cluster-nodes", "1"}, {"--algo", "tree"},
         {"--format", "json"}, {"--out", kTmp + ".txt"}, {"--memory-bandwidth-scale", "2"}, {"--intra-node-GBps", "10"},
         {"--intra-node-bandwidth-scale", "0.5"}, {"--nic-Gbps", "10"}, {"--inter-node-bandwidth-scale", "0.5"}, {"--latency-scale", "10"},
         {"--gpus-per-node", "4"}, {"--nvls", "on"}},
        {}});
}

TEST_CASE("flag walk: every flag of models and strategies changes its answer or is refused") {
  walk({"models --model resnet50",
        {{"--model", "vgg16"}, {"--batch-per-gpu", "8"}, {"--allow-unknown-ops", ""}, {"--seq-len", "64"}, {"--format", "json"}, {"--out", kTmp + ".txt"}},
        {{"--batch-per-gpu", "a zoo model's layers do not depend on the batch (it is ONNX shape inference's)"},
         {"--allow-unknown-ops", "a zoo model has no operator dtsim does not know"}}});
  walk({"strategies", {{"--format", "csv"}, {"--out", kTmp + ".txt"}}, {}});
}
