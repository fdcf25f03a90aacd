#include <algorithm>
#include <iostream>

#include "cli/command.hpp"
#include "core/args.hpp"
#include "core/error.hpp"
#include "core/output.hpp"
#include "sim/framework.hpp"
#include "workload/model_json.hpp"
#include "sim/strategy.hpp"
#include "network/collective.hpp"

namespace dtsim::cli {

const std::set<std::string> kTableJsonCsv = {"table", "json", "csv"};

void emit(const std::string& out_path, const std::string& text) {
  if (out_path.empty()) std::cout << text << std::flush;
  else write_file_atomic(out_path, text);
}

std::string dump(const Json& j) { return j.dump(2) + "\n"; }

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

void TrainingFlags::add_to(CLI::App* c) {
  c->add_option("--cluster", cluster, "Cluster preset name or JSON file")->capture_default_str();
  c->add_option("--precision", precision, "fp32 (PyTorch default: TF32 convolutions, FP32 matmuls), tf32, bf16, fp16 (autocast)")
      ->capture_default_str();
  c->add_option("--memory-format", memory_format, "Activation layout, PyTorch's names: contiguous (NCHW) or channels_last (NHWC)")->capture_default_str();
  c->add_option("--optimizer", optimizer, "torch.optim optimizer (foreach): sgd (momentum), adamw, adam")->capture_default_str();
  c->add_option("--execution", execution,
                "How the step is issued: eager, cuda-graphs (the whole step captured), compile (torch.compile: Inductor fuses "
                "memory-bound kernels), compile-cuda-graphs (torch.compile mode=\"reduce-overhead\")")
      ->capture_default_str();
  algo_opt = c->add_option("--algo", algo, "All-reduce algorithm: " + join_names(collective_algorithm_names()) + " (auto: NCCL's choice per bucket)")
      ->capture_default_str();
  c->add_option("--compute-model", compute_model, "Kernel times: auto (measured MLP predictors where shipped, else roofline), mlp, roofline")
      ->capture_default_str();
  c->add_option("--framework", framework, "Framework profile for host costs: " + join_names(framework_presets()) + " (configs/frameworks) or a JSON file")
      ->capture_default_str();
  overlap_opt = c->add_flag_callback("--no-overlap", [this] { overlap = false; }, "All-reduce gradients after the backward pass instead of overlapping");
  c->add_option("--strategy", strategy, "Training strategy (dtsim strategies describes them): " + join_names(strategy_names()))->capture_default_str();
  StrategyParams& sp = strategy_params;
  const std::string from_config = "the default of configs/strategies.json";
  auto param = [&](const char* flag, int& value, int min, const std::string& help, const std::string& default_note) {
    strategy_flags.push_back({c->add_option(flag, value, help), &value, min, default_note});
  };
  param("--global-skip", sp.global_skip, 1, "daso: steps between global averagings, at least 1 (default: configs/strategies.json)", from_config);
  param("--batches-to-wait", sp.batches_to_wait, 0, "daso: steps after which a global averaging is awaited, at least 0 (default: configs/strategies.json)",
        from_config);
  param("--tau", sp.tau, 1,
        "easgd family: steps between exchanges with the centre; local-sgd: steps between parameter averagings; at least 1 (default: "
        "configs/strategies.json)",
        from_config);
  param("--servers", sp.servers, 1,
        "ps: parameter servers, at least 1 (default: configs/strategies.json's; there 0 means the cluster's collectives.parameter_server.servers, "
        "else one per node)",
        "configs/strategies.json's, else the cluster's, else one per node");
  param("--pr", sp.pr, 1, "grid: model-parallel axis Pr of P = Pr x Pc (default: the best factorisation)", "the best factorisation");
  param("--pc", sp.pc, 1, "grid: batch-parallel axis Pc of P = Pr x Pc (default: the best factorisation)", "the best factorisation");
  c->add_flag("--domain", sp.domain, "grid: domain (spatial) parallel convolutions instead of model parallel ones");
  c->add_option("--format", format, "Output format")->check(CLI::IsMember(kTableJsonCsv))->capture_default_str();
  c->add_option("--out", out, "Write the output to FILE (atomically) instead of stdout");
}

int64_t checked_cluster_nodes(int64_t nodes) {
  if (nodes < 1 || nodes > kMaxClusterNodes) throw InputError("--cluster-nodes", "must be in [1, " + std::to_string(kMaxClusterNodes) + "]");
  return nodes;
}

void ClusterNodesFlag::add_to(CLI::App* c) { option = c->add_option("--cluster-nodes", nodes, "Nodes the cluster has (overrides the preset)"); }

void ClusterNodesFlag::apply(ClusterSpec& c) const {
  if (option->count()) c.nodes = static_cast<int>(checked_cluster_nodes(nodes));
}

void add_allow_unknown_ops(CLI::App* c, bool& flag) {
  c->add_flag("--allow-unknown-ops", flag,
              "ONNX models: cost operators dtsim does not know by roofline from their tensor sizes instead of stopping");
}

void add_seq_len(CLI::App* c, int64_t& seq_len) {
  c->add_option("--seq-len", seq_len,
                "Language models (gpt2_small, bert_base): tokens per sequence, at most the model's learned positions "
                "(default: the model's context)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
}

void print_notes(const Graph& g) {
  for (const auto& n : g.notes) std::cerr << "dtsim: note: " << n << "\n";
}

Graph TrainingFlags::load_model(const std::string& name_or_path, int64_t batch) const {
  ModelLoadOptions options;
  options.batch = std::max<int64_t>(batch, 1);  // a bad batch is reported by its own flag's check
  options.allow_unknown_ops = allow_unknown_ops;
  options.seq_len = seq_len;
  Graph g = dtsim::load_model(name_or_path, options);
  print_notes(g);
  return g;
}

void TrainingFlags::check_strategy_flags() const {
  // plan takes a list of strategies: a flag is refused when none of them reads it.
  const bool algo_given = algo_opt && algo_opt->count(), overlap_given = overlap_opt && overlap_opt->count();
  if (algo_given || overlap_given) {
    bool reads_algo = false, reads_overlap = false;
    for (const auto& name : split(strategy, ',')) {
      const auto s = make_strategy(name);
      reads_algo |= s->uses_algo(), reads_overlap |= s->uses_overlap();
    }
    if (algo_given && !reads_algo)
      throw InputError("--algo", "does not apply to --strategy " + strategy + ", which prices its exchanges itself (no all-reduce algorithm to choose)");
    if (overlap_given && !reads_overlap)
      throw InputError("--no-overlap", "does not apply to --strategy " + strategy + ", whose communication never overlaps the backward pass");
  }
  for (const auto& f : strategy_flags)
    if (f.option->count() > 0 && *f.value < f.min)
      throw InputError(f.option->get_name(), "must be at least " + std::to_string(f.min) + ", got " + std::to_string(*f.value) +
                                                 " (leave the flag out for " + f.default_note + ")");
}

TrainingConfig TrainingFlags::config() const {
  check_strategy_flags();
  return training_config(*this);
}

}  // namespace dtsim::cli
