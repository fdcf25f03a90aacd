#include "cli/command.hpp"
#include "core/error.hpp"
#include "core/output.hpp"
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
    c->add_option("--cluster", cluster_, "Cluster preset name or JSON file")->capture_default_str();
    c->add_option("--precision", precision_, "fp32, tf32, bf16, fp16")->capture_default_str();
    c->add_option("--algo", algo_, "Collective algorithm of the column and row collectives")->capture_default_str();
    c->add_option("--compute-model", compute_model_, "Kernel times: auto, mlp, roofline")->capture_default_str();
    c->add_option("--framework", framework_, "Framework profile for host costs: " + join_names(framework_presets()) + " (configs/frameworks) or a JSON file")->capture_default_str();
    c->add_flag("--domain", domain_, "Domain (spatial) parallel convolutions: halo exchanges instead of model-parallel collectives");
    c->add_option("--format", format_, "Output format")->check(CLI::IsMember(kTableJsonCsv))->capture_default_str();
    c->add_option("--out", out_, "Write the output to FILE (atomically) instead of stdout");
    return c;
  }

  int run() override {
    if (batch_ < 1 || batch_ > (int64_t(1) << 30)) throw InputError("--batch", "must be in [1, 2^30]");
    TrainingFlags f;
    f.cluster = cluster_;
    f.precision = precision_;
    f.algo = algo_;
    f.compute_model = compute_model_;
    Graph g = f.load_model(model_, batch_);
    ClusterSpec c = apply_framework(load_cluster(cluster_), load_framework(framework_));
    const Placement where = place(c, gpus_);
    TrainingConfig cfg = f.config();
    auto algo = make_collective_algorithm(algo_);
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
    if (format_ == "json") {
      Json j = {{"model", g.name}, {"cluster", c.name}, {"gpus", where.gpus}, {"nodes", where.nodes}, {"global_batch", batch_}, {"precision", precision_},
                {"algo", algo->name()}, {"domain", domain_}, {"grid", rows}, {"best", {{"pr", best.pr}, {"pc", best.pc}, {"iteration_s", best.step_s}}}};
      text = dump(j);
    } else if (format_ == "csv") {
      text = csv.to_csv();
    } else {
      text = g.name + " on " + c.name + ": P = " + std::to_string(where.gpus) + " GPUs on " + std::to_string(where.nodes) + " node(s), global batch " +
             std::to_string(batch_) + ", " + precision_ + ", " + algo->name() + " collectives" + (domain_ ? ", domain-parallel convolutions" : "") + "\n";
      text += t.to_text();
      const GridPoint& batch_corner = pts.front();  // Pr = 1 when the batch allows it
      text += "Best: Pr x Pc = " + std::to_string(best.pr) + " x " + std::to_string(best.pc) + ", " + fmt_time(best.step_s) + " per iteration";
      if (batch_corner.pr == 1 && &batch_corner != &best)
        text += " (" + fmt_sig(batch_corner.step_s / best.step_s, 3) + "x faster than pure batch parallelism)";
      text += "\nTrades away: wider collectives of activations in each column, not overlapped with computation.\n";
    }
    emit(out_, text);
    return 0;
  }

 private:
  std::string model_, cluster_ = "h100-sxm", precision_ = "fp32", algo_ = "ring", compute_model_ = "auto", framework_ = "pytorch", format_ = "table", out_;
  int64_t gpus_ = 1, batch_ = 0;
  bool domain_ = false;
};

}  // namespace

std::unique_ptr<Command> make_grid_command() { return std::make_unique<GridCommand>(); }

}  // namespace dtsim::cli
