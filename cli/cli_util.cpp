#include <algorithm>
#include <iostream>

#include "cli/command.hpp"
#include "common/output.hpp"
#include "model/model_json.hpp"
#include "network/collective.hpp"

namespace dtsim::cli {

const std::set<std::string> kTableJsonCsv = {"table", "json", "csv"};

void emit(const std::string& out_path, const std::string& text) {
  if (out_path.empty()) std::cout << text << std::flush;
  else write_file_atomic(out_path, text);
}

std::string dump(const Json& j) { return j.dump(2) + "\n"; }

void TrainingFlags::add_to(CLI::App* c) {
  c->add_option("--cluster", cluster, "Cluster preset name or JSON file")->capture_default_str();
  c->add_option("--precision", precision, "fp32 (PyTorch default: TF32 convolutions, FP32 matmuls), tf32, bf16, fp16 (autocast)")
      ->capture_default_str();
  std::string names;
  for (const auto& n : collective_algorithm_names()) names += (names.empty() ? "" : ", ") + n;
  c->add_option("--algo", algo, "All-reduce algorithm: " + names + " (auto: NCCL's choice per bucket)")->capture_default_str();
  c->add_option("--compute-model", compute_model, "Kernel times: auto (measured MLP predictors where shipped, else roofline), mlp, roofline")
      ->capture_default_str();
  c->add_option("--framework", framework, "Framework profile for host costs: harness, pytorch (configs/frameworks) or a JSON file")
      ->capture_default_str();
  c->add_flag("--no-overlap", no_overlap, "All-reduce gradients after the backward pass instead of overlapping");
  c->add_option("--strategy", strategy, "Training strategy (dtsim strategies lists them): dp, hierarchical, daso, easgd-sync, easgd-async, "
                "measgd-async, hogwild-easgd, ps, grid")->capture_default_str();
  StrategyParams& sp = strategy_params;
  c->add_option("--global-skip", sp.global_skip, "daso: steps between global averagings (default: configs/strategies.json)");
  c->add_option("--batches-to-wait", sp.batches_to_wait, "daso: steps after which a global averaging is awaited (default: configs/strategies.json)");
  c->add_option("--tau", sp.tau, "easgd family: steps between exchanges with the centre; local-sgd: steps between parameter averagings (default: configs/strategies.json)");
  c->add_option("--servers", sp.servers, "ps: parameter servers (default: configs/strategies.json; 0 = one per node)");
  c->add_option("--pr", sp.pr, "grid: model-parallel axis Pr of P = Pr x Pc (default: the best factorisation)");
  c->add_option("--pc", sp.pc, "grid: batch-parallel axis Pc of P = Pr x Pc");
  c->add_flag("--domain", sp.domain, "grid: domain (spatial) parallel convolutions instead of model parallel ones");
  c->add_option("--format", format, "Output format")->check(CLI::IsMember(kTableJsonCsv))->capture_default_str();
  c->add_option("--out", out, "Write the output to FILE (atomically) instead of stdout");
}

void add_allow_unknown_ops(CLI::App* c, bool& flag) {
  c->add_flag("--allow-unknown-ops", flag,
              "ONNX models: cost operators dtsim does not know by roofline from their tensor sizes instead of stopping");
}

void print_notes(const Graph& g) {
  for (const auto& n : g.notes) std::cerr << "dtsim: note: " << n << "\n";
}

Graph TrainingFlags::load_model(const std::string& name_or_path, int64_t batch) const {
  ModelLoadOptions options;
  options.batch = std::max<int64_t>(batch, 1);  // a bad batch is reported by its own flag's check
  options.allow_unknown_ops = allow_unknown_ops;
  Graph g = dtsim::load_model(name_or_path, options);
  print_notes(g);
  return g;
}

TrainingConfig TrainingFlags::config() const {
  TrainingConfig cfg;
  cfg.precision = parse_precision(precision);
  cfg.algo = algo;
  cfg.compute_model = compute_model;
  if (no_overlap) cfg.overlap = false;
  cfg.strategy = strategy;
  cfg.strategy_params = strategy_params;
  return cfg;
}

}  // namespace dtsim::cli
