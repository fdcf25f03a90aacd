#include "cli/command.hpp"
#include "common/args.hpp"
#include "common/output.hpp"
#include "model/model_json.hpp"
#include "model/report.hpp"

namespace dtsim::cli {
namespace {

class SweepCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* c = app.add_subcommand("sweep", "Predict every combination of models, GPU counts and batch sizes");
    c->add_option("--model", models_, "Model names or files, comma-separated")->required();
    c->add_option("--gpus", gpus_, "GPU counts: 1,2,4 or 1..8 (every integer) or 1..64:x2 (doubling)")->capture_default_str();
    c->add_option("--batch-per-gpu", batches_, "Batch sizes per GPU, same list syntax")->required();
    flags_.add_to(c);
    return c;
  }

  int run() override {
    ClusterSpec c = load_cluster(flags_.cluster);
    std::vector<Graph> graphs;
    for (const auto& m : split(models_, ',')) graphs.push_back(load_model(m));
    auto gpus = parse_int_list("--gpus", gpus_, 1, c.capacity_gpus());
    auto batches = parse_int_list("--batch-per-gpu", batches_, 1, kMaxBatchPerGpu);
    TrainingConfig cfg = flags_.config();
    Json rows = Json::array();
    Table human{prediction_columns(true), {}}, csv{prediction_columns(false), {}};
    std::string compute_model;
    for (const auto& g : graphs)
      for (int64_t b : batches)
        for (int64_t n : gpus) {
          cfg.gpus = n;
          cfg.batch_per_gpu = b;
          Prediction p = predict(g, c, cfg);
          compute_model = p.compute_model;
          rows.push_back(prediction_summary_json(p));
          human.rows.push_back(prediction_row(p, true));
          csv.rows.push_back(prediction_row(p, false));
        }
    if (flags_.format == "json") emit(flags_.out, dump(rows));
    else if (flags_.format == "csv") emit(flags_.out, csv.to_csv());
    else
      emit(flags_.out, "cluster " + c.name + " (" + c.gpu.name + ", " + std::to_string(c.gpus_per_node) + " GPUs per node), " +
                           precision_name(cfg.precision) + ", compute model: " + compute_model + "\n" + human.to_text());
    return 0;
  }

 private:
  TrainingFlags flags_;
  std::string models_, gpus_ = "1", batches_;
};

}  // namespace

std::unique_ptr<Command> make_sweep_command() { return std::make_unique<SweepCommand>(); }

}  // namespace dtsim::cli
