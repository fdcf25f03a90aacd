#include <algorithm>
#include <iostream>

#include "cli/command.hpp"
#include "cli/study_flags.hpp"
#include "core/args.hpp"
#include "core/error.hpp"
#include "core/output.hpp"
#include "report/plot.hpp"
#include "core/progress.hpp"
#include "sim/framework.hpp"
#include "compute/compute_model.hpp"
#include "workload/model_json.hpp"
#include "network/collective.hpp"
#include "report/report.hpp"
#include "report/study_plots.hpp"
#include "report/verdict_report.hpp"
#include "study/verdict.hpp"

namespace dtsim::cli {
namespace {

class SweepCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* c = app.add_subcommand("sweep",
                                 "Predict every combination of models, batch sizes, GPU counts and hardware what-ifs; "
                                 "with a verdict on what bounds each and where scaling breaks");
    c->add_option("--sweep", sweep_file_, "A sweep file (configs/sweeps/*.json; docs/scaling-study.md); flags below override its training and output");
    c->add_option("--model", models_, "Model names or files (.json, .onnx), comma-separated");
    add_allow_unknown_ops(c, flags_.allow_unknown_ops);
    add_seq_len(c, flags_.seq_len);
    gpus_opt_ = c->add_option("--gpus", gpus_, "GPU counts: 1,2,4 or 1..8 (every integer) or 1..64:x2 (doubling)");
    nodes_opt_ = c->add_option("--nodes", nodes_, "Node counts instead of GPU counts (each node full), same list syntax");
    c->add_option("--batch-per-gpu", batches_, "Batch sizes per GPU, same list syntax");
    nodes_cap_opt_ = c->add_option("--cluster-nodes", cluster_nodes_, "Nodes the cluster has (overrides the preset, for studies beyond its size)");
    bucket_opt_ = c->add_option("--bucket-mb", bucket_mb_, "DDP's gradient bucket size in MiB (PyTorch's bucket_cap_mb; default: the cluster's, 25)");
    whatif_.add_to(c, true);
    train_.add_to(c);
    c->add_option("--plot", plot_, "Draw throughput and scaling efficiency against GPU count to FILE.png or FILE.svg (gnuplot)")->group("Plots");
    c->add_option("--plot-breakdown", plot_breakdown_, "Draw the iteration breakdown as stacked bars to FILE.png or FILE.svg")->group("Plots");
    c->add_option("--verdict", verdict_out_, "Also write the sweep's verdict to FILE (.json: structured; else text)");
    flags_.add_to(c);
    app_ = c;
    return c;
  }

  int run() override {
    SweepSpec s = spec();
    // Everything that can be refused is refused before the work starts.
    if (!plot_.empty()) plot_format("--plot", plot_), find_gnuplot("--plot");
    if (!plot_breakdown_.empty()) plot_format("--plot-breakdown", plot_breakdown_), find_gnuplot("--plot-breakdown");

    SweepResult res;
    {
      Progress bar("sweep", sweep_size(s));
      res = run_sweep(s, [&] { bar.tick(); });
    }
    for (const auto& n : res.notes) std::cerr << "dtsim: note: " << n << "\n";
    const SweepVerdict verdict = sweep_verdict(res);
    const std::vector<std::string> verdict_lines = sweep_verdict_lines(res, verdict);

    std::vector<Plot> plots;
    if (!plot_.empty()) plots.push_back(scaling_plot(res, plot_, "--plot"));
    if (!plot_breakdown_.empty()) plots.push_back(breakdown_plot(res, plot_breakdown_, "--plot-breakdown"));

    const StudyColumns cols = study_columns_for(res.rows);
    std::string text;
    if (flags_.format == "json") {
      Json rows = Json::array();
      for (const auto& r : res.rows) rows.push_back(study_row_json(r));
      text = dump(rows);
    } else if (flags_.format == "csv") {
      Table t{study_columns(false, cols), {}};
      for (const auto& r : res.rows) t.rows.push_back(study_row_cells(r, false, cols));
      text = t.to_csv();
    } else {
      Table t{study_columns(true, cols), {}};
      for (const auto& r : res.rows) t.rows.push_back(study_row_cells(r, true, cols));
      text = "cluster " + res.cluster_name + " (" + res.gpu_name + "), " + res.precision + ", " + step_mode_text(res.mode) + ", compute model: " + res.compute_model + "\n" + t.to_text();
      text += "\nVerdict\n";
      for (const auto& l : verdict_lines) text += "- " + l + "\n";
    }
    if (!verdict_out_.empty()) {
      std::string v;
      if (verdict_out_.size() > 5 && verdict_out_.compare(verdict_out_.size() - 5, 5, ".json") == 0) v = dump(sweep_verdict_json(res, verdict));
      else
        for (const auto& l : verdict_lines) v += l + "\n";
      write_file_atomic(verdict_out_, v);
    }
    for (auto& p : plots) p.commit();
    emit(flags_.out, text);
    return 0;
  }

 private:
  SweepSpec spec() {
    SweepSpec s;
    if (!sweep_file_.empty()) {
      for (const auto& [given, flag] : {std::pair<bool, const char*>{!models_.empty(), "--model"}, {!batches_.empty(), "--batch-per-gpu"},
                                        {gpus_opt_->count() > 0, "--gpus"}, {nodes_opt_->count() > 0, "--nodes"}, {whatif_.any(), "what-if flags"},
                                        {given_("--cluster"), "--cluster"}, {given_("--precision"), "--precision"}, {given_("--algo"), "--algo"},
                                        {given_("--no-overlap"), "--no-overlap"}, {given_("--framework"), "--framework"},
                                        {given_("--memory-format"), "--memory-format"}, {given_("--optimizer"), "--optimizer"},
                                        {given_("--execution"), "--execution"}})
        if (given) throw InputError("--sweep", std::string("the sweep file sets the configurations; drop ") + flag + " or the file");
      s = load_sweep(sweep_file_);
    } else {
      if (models_.empty()) throw InputError("--model", "required (or give a sweep file with --sweep)");
      if (batches_.empty()) throw InputError("--batch-per-gpu", "required (or give a sweep file with --sweep)");
      if (gpus_opt_->count() && nodes_opt_->count()) throw InputError("--nodes", "give GPU counts (--gpus) or node counts (--nodes), not both");
      s.name = "sweep";
      s.batches = parse_int_list("--batch-per-gpu", batches_, 1, kMaxBatchPerGpu);
      for (const auto& m : split(models_, ',')) {
        ModelLoadOptions check;  // fails early, naming --model (run_sweep loads ONNX models at every batch)
        check.batch = s.batches.front();
        check.allow_unknown_ops = flags_.allow_unknown_ops;
        check.seq_len = flags_.seq_len;
        load_model(m, check);
        s.models.push_back(m);
      }
      s.cluster = flags_.cluster;
      s.framework = flags_.framework;
      load_framework(s.framework);
      s.precision = flags_.precision;
      parse_precision(s.precision);
      s.algo = flags_.algo;
      make_collective_algorithm(flags_.algo);
      s.overlap = flags_.overlap;
      static_cast<StepModeNames&>(s) = flags_;
      parse_step_mode(s);  // fails early, naming the flag
      s.by_nodes = nodes_opt_->count() > 0;
      s.gpus = s.by_nodes ? parse_int_list("--nodes", nodes_, 1, kMaxClusterNodes) : parse_int_list("--gpus", gpus_, 1, kMaxGpus);
      s.gpus_where = s.by_nodes ? "--nodes" : "--gpus";
      s.what_ifs = what_if_grid(whatif_.axes());
    }
    if (nodes_cap_opt_->count()) s.cluster_nodes = checked_cluster_nodes(cluster_nodes_);
    if (bucket_opt_->count()) {
      ClusterSpec probe;
      set_bucket_mb(probe, bucket_mb_, "--bucket-mb");  // refused here, naming the flag
      s.bucket_mb = bucket_mb_;
    }
    s.compute_model = flags_.compute_model;
    const auto names = compute_model_names();  // fails early, naming --compute-model
    if (std::find(names.begin(), names.end(), s.compute_model) == names.end())
      make_compute_model(s.compute_model, GpuSpec{});  // throws the one-line error listing the names
    s.strategy = flags_.strategy;
    flags_.check_strategy_flags();
    s.strategy_params = flags_.strategy_params;
    make_strategy(s.strategy);  // fails early, naming --strategy
    s.train = train_.goal(s.train);
    s.allow_unknown_ops = flags_.allow_unknown_ops;
    s.seq_len = flags_.seq_len;
    return s;
  }

  bool given_(const std::string& flag) const {
    const CLI::Option* o = app_->get_option_no_throw(flag);
    return o && o->count() > 0;
  }

  CLI::App* app_ = nullptr;
  TrainingFlags flags_;
  WhatIfFlags whatif_;
  TrainFlags train_;
  std::string sweep_file_, models_, gpus_ = "1", nodes_, batches_, plot_, plot_breakdown_, verdict_out_;
  int64_t cluster_nodes_ = 0;
  double bucket_mb_ = 25;
  CLI::Option *bucket_opt_ = nullptr, *gpus_opt_ = nullptr, *nodes_opt_ = nullptr, *nodes_cap_opt_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> make_sweep_command() { return std::make_unique<SweepCommand>(); }

}  // namespace dtsim::cli
