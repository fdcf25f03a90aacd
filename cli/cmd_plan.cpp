#include <iostream>
#include <sstream>

#include "cli/command.hpp"
#include "cli/study_flags.hpp"
#include "core/args.hpp"
#include "core/error.hpp"
#include "report/plan_report.hpp"
#include "report/report.hpp"
#include "core/output.hpp"
#include "report/plot.hpp"
#include "core/progress.hpp"
#include "workload/model_json.hpp"
#include "study/plan.hpp"
#include "sim/strategy.hpp"
#include "network/collective.hpp"

namespace dtsim::cli {
namespace {

std::vector<std::string> names(const std::string& flag, const std::string& text) {
  std::vector<std::string> out;
  for (const auto& x : split(text, ','))
    if (x.empty()) throw InputError(flag, "has an empty name in '" + text + "'");
    else out.push_back(x);
  return out;
}

// Every combination of the memory formats, optimizers and executions given (each a comma-separated list).
std::vector<StepMode> step_modes(const TrainingFlags& f) {
  std::vector<StepMode> modes;
  for (const auto& mf : names("--memory-format", f.memory_format))
    for (const auto& op : names("--optimizer", f.optimizer))
      for (const auto& ex : names("--execution", f.execution)) {
        StepModeNames n;
        n.memory_format = mf, n.optimizer = op, n.execution = ex;
        modes.push_back(parse_step_mode(n));
      }
  return modes;
}

class PlanCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* c = app.add_subcommand("plan",
                                 "Search every combination of clusters, GPU counts, batch sizes, precisions, strategies, algorithms, "
                                 "what-ifs and bucket sizes for the fastest and the cheapest way to train (docs/plan.md)");
    c->add_option("--model", model_, "Zoo name, model JSON or ONNX file")->required();
    c->add_option("--gpus", gpus_, "GPU counts: 1,2,4 or 1..1024 (every integer), 1..1024:x2 (doubling), 8..1024:+8 (whole 8-GPU nodes)")->capture_default_str();
    c->add_option("--batch-per-gpu", batches_, "Batch sizes per GPU, same list syntax")->required();
    c->add_option("--bucket-mb", buckets_, "DDP bucket sizes in MiB, a list (default: the cluster's, PyTorch's 25)");
    c->add_option("--cluster-nodes", cluster_nodes_, "Nodes every cluster has (overrides the presets)");
    c->add_option("--dataset-size", dataset_size_, "Samples per epoch (1281167, 1.2e6 or 1M)")->required()->group("Goal and limits");
    c->add_option("--epochs", epochs_, "Epochs")->required()->group("Goal and limits");
    c->add_option("--price-per-gpu-hour", price_, "Price of one GPU-hour for every cluster (default: each cluster file's price_per_gpu_hour)")
        ->group("Goal and limits");
    c->add_option("--deadline-h", deadline_h_, "Only configurations that train within H hours")->group("Goal and limits");
    c->add_option("--budget", budget_, "Only configurations that cost at most X")->group("Goal and limits");
    c->add_option("--max-global-batch", max_global_batch_, "Only configurations whose global batch (GPUs x batch per GPU) is at most G")
        ->group("Goal and limits");
    c->add_flag("--partial-nodes", partial_nodes_,
                "Also search jobs that fill their last node only in part (by default a job of more GPUs than a node holds takes whole nodes)")
        ->group("Goal and limits");
    c->add_option("--objective", objective_, "Order of the top list: time (to train) or cost")->capture_default_str()->group("Output");
    c->add_option("--top", top_, "How many configurations the top list has")->capture_default_str()->group("Output");
    c->add_option("--plot", plot_, "Draw the Pareto front (time to train against cost) to FILE.png or FILE.svg (gnuplot)")->group("Output");
    c->add_option("--threads", threads_, "Threads (default: every core); the output does not depend on it");
    whatif_.add_to(c, true);
    flags_.add_to(c);
    // The shared flags are lists here.
    c->get_option("--cluster")->description("Cluster presets or JSON files, comma-separated");
    c->get_option("--precision")->description("Precisions, comma-separated: fp32 (PyTorch default: TF32 convolutions, FP32 matmuls), tf32, bf16, fp16 (autocast)");
    c->get_option("--algo")->description("All-reduce algorithms, comma-separated: " + join_names(collective_algorithm_names()));
    c->get_option("--strategy")->description("Training strategies, comma-separated: " + join_names(strategy_names()));
    c->get_option("--memory-format")->description("Memory formats, comma-separated: contiguous, channels_last");
    c->get_option("--optimizer")->description("Optimizers, comma-separated: sgd, adamw, adam");
    c->get_option("--execution")->description("Executions, comma-separated: eager, cuda-graphs, compile, compile-cuda-graphs");
    add_allow_unknown_ops(c, flags_.allow_unknown_ops);
    // A language model's sample is a sequence: --dataset-size counts sequences of --seq-len tokens.
    add_seq_len(c, seq_len_);
    app_ = c;
    return c;
  }

  int run() override {
    PlanSpec s;
    s.model = model_;
    s.allow_unknown_ops = flags_.allow_unknown_ops;
    s.seq_len = seq_len_;
    s.clusters = names("--cluster", flags_.cluster);
    s.precisions = names("--precision", flags_.precision);
    s.strategies = names("--strategy", flags_.strategy);
    s.algos = names("--algo", flags_.algo);
    s.framework = flags_.framework;
    s.compute_model = flags_.compute_model;
    s.overlap = flags_.overlap;
    s.modes = step_modes(flags_);
    s.partial_nodes = partial_nodes_;
    flags_.check_strategy_flags();
    s.strategy_params = flags_.strategy_params;
    s.gpus = parse_int_list("--gpus", gpus_, 1, kMaxGpus);
    s.batches = parse_int_list("--batch-per-gpu", batches_, 1, kMaxBatchPerGpu);
    if (given("--bucket-mb")) s.bucket_mbs = parse_real_list("--bucket-mb", buckets_, -1e300, 1e300);
    if (given("--cluster-nodes")) s.cluster_nodes = checked_cluster_nodes(cluster_nodes_);
    s.what_ifs = what_if_grid(whatif_.axes());
    s.dataset_size = parse_count("--dataset-size", dataset_size_);
    s.epochs = epochs_;
    if (given("--price-per-gpu-hour")) s.price_per_gpu_hour = price_;
    if (given("--deadline-h")) {
      if (!(deadline_h_ > 0)) throw InputError("--deadline-h", "must be greater than 0");
      s.deadline_s = deadline_h_ * 3600;
    }
    if (given("--budget")) s.budget = budget_;
    if (given("--max-global-batch")) s.max_global_batch = max_global_batch_;
    s.objective = objective_;
    if (top_ < 1) throw InputError("--top", "must be at least 1");
    s.top = static_cast<size_t>(top_);
    if (given("--threads")) {
      if (threads_ < 1 || threads_ > 1024) throw InputError("--threads", "must be in [1, 1024]");
      s.threads = static_cast<unsigned>(threads_);
    }
    if (!plot_.empty()) plot_format("--plot", plot_), find_gnuplot("--plot");
    check_plan(s);

    PlanResult r;
    {
      Progress bar("plan", plan_size(s));
      r = run_plan(s, [&](size_t n) { bar.tick(n); });
    }

    if (!r.note.empty()) std::cerr << "dtsim: note: " << r.note << "\n";
    std::vector<Plot> plots;
    if (!plot_.empty()) plots.push_back(plan_front_plot(s, r, "--plot", plot_));
    const std::string text = flags_.format == "json" ? plan_json(s, r) : flags_.format == "csv" ? plan_csv(r) : plan_text(s, r);
    for (auto& p : plots) p.commit();
    emit(flags_.out, text);
    return 0;
  }

 private:
  bool given(const std::string& flag) const {
    const CLI::Option* o = app_->get_option_no_throw(flag);
    return o && o->count() > 0;
  }

  CLI::App* app_ = nullptr;
  TrainingFlags flags_;
  WhatIfFlags whatif_;
  std::string model_, gpus_ = "1", batches_, buckets_, plot_, objective_ = "time";
  std::string dataset_size_;
  int64_t cluster_nodes_ = 0, max_global_batch_ = 0, top_ = 10, threads_ = 0, seq_len_ = 0;
  bool partial_nodes_ = false;
  double epochs_ = 0, price_ = 0, deadline_h_ = 0, budget_ = 0;
};

}  // namespace

std::unique_ptr<Command> make_plan_command() { return std::make_unique<PlanCommand>(); }

}  // namespace dtsim::cli
