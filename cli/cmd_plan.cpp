#include <iostream>
#include <sstream>

#include "cli/command.hpp"
#include "cli/study_flags.hpp"
#include "core/args.hpp"
#include "core/error.hpp"
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

Json config_json(const PlanConfig& c) {
  return Json{{"cluster", c.cluster},
              {"gpu", c.gpu},
              {"gpus", c.gpus},
              {"nodes", c.nodes},
              {"batch_per_gpu", c.batch_per_gpu},
              {"precision", c.precision},
              {"strategy", c.strategy},
              {"algo", c.algo},
              {"nic_Gbps", c.nic_Gbps},
              {"bucket_mb", c.bucket_mb},
              {"what_if", c.what_if.to_json()},
              {"iteration_s", c.iteration_s},
              {"time_to_train_s", c.time_to_train_s},
              {"steps", c.steps},
              {"gpu_hours", c.gpu_hours},
              {"price_per_gpu_hour", c.price_per_gpu_hour},
              {"cost", c.cost}};
}

std::vector<std::string> cells(const PlanConfig& c, bool human) {
  return {c.cluster,
          std::to_string(c.gpus),
          std::to_string(c.nodes),
          std::to_string(c.batch_per_gpu),
          c.precision,
          c.strategy,
          c.algo,
          fmt_number(c.nic_Gbps),
          fmt_number(c.bucket_mb),
          human ? fmt_time(c.iteration_s) : fmt_sig(c.iteration_s, 17),
          human ? fmt_sig(c.time_to_train_s / 3600, 4) : fmt_sig(c.time_to_train_s, 17),
          human ? fmt_sig(c.cost, 4) : fmt_sig(c.cost, 17)};
}

std::vector<std::string> header(bool human) {
  return {"cluster", "gpus", "nodes", "batch_per_gpu", "precision", "strategy", "algo", "nic_Gbps", "bucket_mb",
          human ? "iteration" : "iteration_s", human ? "time_to_train_h" : "time_to_train_s", "cost"};
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
    c->add_option("--dataset-size", dataset_size_, "Samples per epoch")->required()->group("Goal and limits");
    c->add_option("--epochs", epochs_, "Epochs")->required()->group("Goal and limits");
    c->add_option("--price-per-gpu-hour", price_, "Price of one GPU-hour for every cluster (default: each cluster file's price_per_gpu_hour)")
        ->group("Goal and limits");
    c->add_option("--deadline-h", deadline_h_, "Only configurations that train within H hours")->group("Goal and limits");
    c->add_option("--budget", budget_, "Only configurations that cost at most X")->group("Goal and limits");
    c->add_option("--max-global-batch", max_global_batch_, "Only configurations whose global batch (GPUs x batch per GPU) is at most G")
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
    s.mode = parse_step_mode(flags_);
    flags_.check_strategy_flags();
    s.strategy_params = flags_.strategy_params;
    s.gpus = parse_int_list("--gpus", gpus_, 1, kMaxGpus);
    s.batches = parse_int_list("--batch-per-gpu", batches_, 1, kMaxBatchPerGpu);
    if (given("--bucket-mb")) s.bucket_mbs = parse_real_list("--bucket-mb", buckets_, -1e300, 1e300);
    if (given("--cluster-nodes")) s.cluster_nodes = checked_cluster_nodes(cluster_nodes_);
    s.what_ifs = what_if_grid(whatif_.axes());
    s.dataset_size = dataset_size_;
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
    if (!plot_.empty()) plots.push_back(front_plot(r, s));

    std::string text;
    if (flags_.format == "json") {
      Json j{{"model", s.model},
             {"memory_format", memory_format_name(s.mode.memory_format)},
             {"optimizer", optimizer_name(s.mode.optimizer)},
             {"execution", execution_name(s.mode.execution)},
             {"evaluated", r.evaluated},
             {"priced", r.priced},
             {"feasible", r.feasible},
             {"skipped", Json{{"over_capacity", r.over_capacity},
                              {"over_global_batch", r.over_global_batch},
                              {"out_of_memory", r.out_of_memory},
                              {"over_deadline", r.over_deadline},
                              {"over_budget", r.over_budget}}},
             {"objective", r.objective}};
      Json front = Json::array(), top = Json::array();
      for (const auto& c : r.pareto) front.push_back(config_json(c));
      for (const auto& c : r.top) top.push_back(config_json(c));
      j["pareto"] = front;
      j["fastest"] = r.fastest ? config_json(*r.fastest) : Json(nullptr);
      j["cheapest"] = r.cheapest ? config_json(*r.cheapest) : Json(nullptr);
      j["top"] = top;
      if (!r.note.empty()) j["note"] = r.note;
      text = dump(j);
    } else if (flags_.format == "csv") {
      Table t{header(false), {}};
      t.header.insert(t.header.begin(), "set");
      auto add = [&](const std::string& set, const PlanConfig& c) {
        auto row = cells(c, false);
        row.insert(row.begin(), set);
        t.rows.push_back(row);
      };
      if (r.fastest) add("fastest", *r.fastest);
      if (r.cheapest) add("cheapest", *r.cheapest);
      for (const auto& c : r.pareto) add("pareto", c);
      for (const auto& c : r.top) add("top_" + r.objective, c);
      text = t.to_csv();
    } else {
      std::ostringstream o;
      o << "plan for " << s.model << " (" << step_mode_text(s.mode) << "): " << r.evaluated << " configurations, " << r.feasible << " feasible (" << r.priced << " priced; skipped: "
        << r.over_capacity << " beyond the cluster, " << r.over_global_batch << " over the global-batch limit, " << r.out_of_memory
        << " out of GPU memory; " << r.over_deadline << " over the deadline, " << r.over_budget << " over the budget)\n";
      if (!r.fastest) {
        o << "No configuration is feasible.\n";
      } else {
        auto table = [&](const std::vector<PlanConfig>& cs) {
          Table t{header(true), {}};
          for (const auto& c : cs) t.rows.push_back(cells(c, true));
          return t.to_text();
        };
        o << "\nFastest\n" << table({*r.fastest}) << "\nCheapest\n" << table({*r.cheapest});
        o << "\nPareto front: time to train against cost (" << r.pareto.size() << " configurations)\n" << table(r.pareto);
        o << "\nTop " << r.top.size() << " by " << (r.objective == "time" ? "time to train" : "cost") << "\n" << table(r.top);
      }
      text = o.str();
    }
    for (auto& p : plots) p.commit();
    emit(flags_.out, text);
    return 0;
  }

 private:
  bool given(const std::string& flag) const {
    const CLI::Option* o = app_->get_option_no_throw(flag);
    return o && o->count() > 0;
  }

  static std::string num(double x) {
    char b[40];
    std::snprintf(b, sizeof b, "%.9g", x);
    return b;
  }

  Plot front_plot(const PlanResult& r, const PlanSpec& s) const {
    Plot plot("--plot", plot_, 1000, 640);
    std::string d = "# time_to_train_h cost\n", ends;
    for (const auto& c : r.pareto) d += num(c.time_to_train_s / 3600) + " " + num(c.cost) + "\n";
    std::vector<PlotFile> files{{"front.dat", d}};
    std::ostringstream gp;
    gp << "set title " << gp_quote(s.model + ": the fastest and the cheapest ways to train (" + std::to_string(r.feasible) + " feasible of " +
                                   std::to_string(r.evaluated) + " configurations)")
       << "\nset xlabel 'time to train (h)'\nset ylabel 'cost'\nset grid\nset logscale x\nset key top right\n";
    if (r.fastest) {
      files.push_back({"ends.dat", num(r.fastest->time_to_train_s / 3600) + " " + num(r.fastest->cost) + "\n" + num(r.cheapest->time_to_train_s / 3600) +
                                       " " + num(r.cheapest->cost) + "\n"});
      auto label = [&](const PlanConfig& c, const char* what) {
        return std::string(what) + ": " + c.cluster + ", " + std::to_string(c.gpus) + " GPUs, batch " + std::to_string(c.batch_per_gpu) + ", " + c.precision;
      };
      gp << "set label 1 " << gp_quote(label(*r.fastest, "fastest")) << " at " << num(r.fastest->time_to_train_s / 3600) << "," << num(r.fastest->cost)
         << " offset 2,0 font ',9'\n";
      gp << "set label 2 " << gp_quote(label(*r.cheapest, "cheapest")) << " at " << num(r.cheapest->time_to_train_s / 3600) << ","
         << num(r.cheapest->cost) << " offset 1,-1 font ',9'\n";
      gp << "plot 'front.dat' using 1:2 with linespoints pt 7 ps 0.8 title 'Pareto front', 'ends.dat' using 1:2 with points pt 6 ps 2.5 lc rgb 'red' "
            "title 'fastest, cheapest'\n";
    } else {
      gp << "set label 1 'no feasible configuration' at graph 0.5,0.5 center\nplot [1:10] [0:1] NaN notitle\n";
    }
    plot.render(gp.str(), files);
    return plot;
  }

  CLI::App* app_ = nullptr;
  TrainingFlags flags_;
  WhatIfFlags whatif_;
  std::string model_, gpus_ = "1", batches_, buckets_, plot_, objective_ = "time";
  int64_t cluster_nodes_ = 0, dataset_size_ = 0, max_global_batch_ = 0, top_ = 10, threads_ = 0, seq_len_ = 0;
  double epochs_ = 0, price_ = 0, deadline_h_ = 0, budget_ = 0;
};

}  // namespace

std::unique_ptr<Command> make_plan_command() { return std::make_unique<PlanCommand>(); }

}  // namespace dtsim::cli
