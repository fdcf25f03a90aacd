#include "cli/command.hpp"
#include "compute/compute_model.hpp"
#include "core/error.hpp"
#include "core/output.hpp"
#include "report/report.hpp"
#include "sim/framework.hpp"
#include "sim/strategies/grid.hpp"

namespace dtsim::cli {
namespace {

// dtsim grid: every factorisation P = Pr x Pc of integrated model/batch parallelism (Gholami et
// al.), its communication and step time, and the best one.
class GridCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* c = app.add_subcommand("grid", "Integrated model/batch parallelism: every Pr x Pc = P with its communication and iteration time, and the best");
    c->add_option("--model", model_, "Zoo name, model JSON or ONNX file")->required();
    c->add_option("--gpus", gpus_, "P, the number of GPUs")->required();
    c->add_option("--batch", batch_, "Global batch B (each of the Pc columns takes B / Pc)")->required();
    c->add_option("--cluster", flags_.cluster, "Cluster preset name or JSON file")->capture_default_str();
    c->add_option("--precision", flags_.precision, "fp32, tf32, bf16, fp16")->capture_default_str();
    c->add_option("--memory-format", flags_.memory_format, "Activation layout: contiguous (NCHW) or channels_last (NHWC)")->capture_default_str();
    c->add_option("--optimizer", flags_.optimizer, "torch.optim optimizer (foreach): sgd, adamw, adam")->capture_default_str();
    c->add_option("--execution", flags_.execution, "eager, cuda-graphs, compile, compile-cuda-graphs")->capture_default_str();
    c->add_option("--algo", flags_.algo, "Collective algorithm of the column and row collectives")->capture_default_str();
    c->add_option("--compute-model", flags_.compute_model, "Kernel times: " + join_names(compute_model_names()))->capture_default_str();
    c->add_option("--framework", flags_.framework, "Framework profile for host costs: " + join_names(framework_presets()) + " (configs/frameworks) or a JSON file")
        ->capture_default_str();
    c->add_flag("--domain", domain_, "Domain (spatial) parallel convolutions: halo exchanges instead of model-parallel collectives");
    c->add_option("--format", flags_.format, "Output format")->check(CLI::IsMember(kTableJsonCsv))->capture_default_str();
    c->add_option("--out", flags_.out, "Write the output to FILE (atomically) instead of stdout");
    return c;
  }

  int run() override {
    if (batch_ < 1 || batch_ > (int64_t(1) << 30)) throw InputError("--batch", "must be in [1, 2^30]");
    Graph g = flags_.load_model(model_, batch_);
    ClusterSpec c = apply_framework(load_cluster(flags_.cluster), load_framework(flags_.framework));
    const Placement where = place(c, gpus_);
    TrainingConfig cfg = flags_.config();
    auto algo = make_collective_algorithm(flags_.algo);
    auto column_step = [&](int64_t b) { return single_gpu_step(g, c, cfg, b); };
    const std::vector<GridPoint> pts = grid_points(g, c, *algo, cfg.precision, batch_, where.gpus, domain_, column_step);
    const GridPoint& best = best_grid_point(pts);

    Table t{{"Pr", "Pc", "batch/column", "compute", "activation comm", "weight comm", "comm", "iteration", "comm share", "best"}, {}};
    Table csv{{"pr", "pc", "batch_per_column", "compute_s", "activation_comm_s", "weight_comm_s", "comm_s", "iteration_s", "comm_share", "best"}, {}};
    Json rows = Json::array();
    for (const auto& p : pts) {
      const bool is_best = &p == &best;
      const double share = p.comm_s / p.step_s;
      t.rows.push_back({std::to_string(p.pr), std::to_string(p.pc), std::to_string(p.batch_per_column), fmt_time(p.compute_s), fmt_time(p.activation_comm_s),
                        fmt_time(p.weight_comm_s), fmt_time(p.comm_s), fmt_time(p.step_s), fmt_sig(100 * share, 3) + "%", is_best ? "*" : ""});
      csv.rows.push_back({std::to_string(p.pr), std::to_string(p.pc), std::to_string(p.batch_per_column), fmt_sig(p.compute_s, 6), fmt_sig(p.activation_comm_s, 6),
                          fmt_sig(p.weight_comm_s, 6), fmt_sig(p.comm_s, 6), fmt_sig(p.step_s, 6), fmt_sig(share, 6), is_best ? "true" : "false"});
      rows.push_back({{"pr", p.pr}, {"pc", p.pc}, {"batch_per_column", p.batch_per_column}, {"compute_s", p.compute_s},
                      {"activation_comm_s", p.activation_comm_s}, {"weight_comm_s", p.weight_comm_s}, {"comm_s", p.comm_s}, {"iteration_s", p.step_s},
                      {"comm_share", share}, {"best", is_best}});
    }
    std::string text;
    if (flags_.format == "json") {
      Json j = {{"model", g.name}, {"cluster", c.name}, {"gpus", where.gpus}, {"nodes", where.nodes}, {"global_batch", batch_}, {"precision", flags_.precision}, {"memory_format", memory_format_name(cfg.mode.memory_format)},
                 {"optimizer", optimizer_name(cfg.mode.optimizer)}, {"execution", execution_name(cfg.mode.execution)},
                {"algo", algo->name()}, {"domain", domain_}, {"grid", rows}, {"best", {{"pr", best.pr}, {"pc", best.pc}, {"iteration_s", best.step_s}}}};
      text = dump(j);
    } else if (flags_.format == "csv") {
      text = csv.to_csv();
    } else {
      text = g.name + " on " + c.name + ": P = " + std::to_string(where.gpus) + " GPUs on " + std::to_string(where.nodes) + " node(s), global batch " +
             std::to_string(batch_) + ", " + flags_.precision + ", " + step_mode_text(cfg.mode) + ", " + algo->name() + " collectives" + (domain_ ? ", domain-parallel convolutions" : "") + "\n";
      text += t.to_text();
      const GridPoint& batch_corner = pts.front();  // Pr = 1 when the batch allows it
      text += "Best: Pr x Pc = " + std::to_string(best.pr) + " x " + std::to_string(best.pc) + ", " + fmt_time(best.step_s) + " per iteration";
      if (batch_corner.pr == 1 && &batch_corner != &best)
        text += " (" + fmt_sig(batch_corner.step_s / best.step_s, 3) + "x faster than pure batch parallelism)";
      text += "\nTrades away: wider collectives of activations in each column, not overlapped with computation.\n";
    }
    emit(flags_.out, text);
    return 0;
  }

 private:
  // The run's settings and output (not TrainingFlags::add_to's flags: grid has its own help, and
  // its collectives default to ring rather than NCCL's choice).
  static TrainingFlags ring_flags() {
    TrainingFlags f;
    f.algo = "ring";
    return f;
  }
  TrainingFlags flags_ = ring_flags();
  std::string model_;
  int64_t gpus_ = 1, batch_ = 0;
  bool domain_ = false;
};

}  // namespace

std::unique_ptr<Command> make_grid_command() { return std::make_unique<GridCommand>(); }

}  // namespace dtsim::cli
