#include "cli/command.hpp"
#include "common/output.hpp"
#include "model/model_json.hpp"
#include "model/report.hpp"

namespace dtsim::cli {
namespace {

class PredictCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* c = app.add_subcommand("predict", "Predict one training configuration");
    c->add_option("--model", model_, "Zoo name, model JSON or ONNX file")->required();
    c->add_option("--gpus", gpus_, "Number of GPUs (placed on ceil(gpus / gpus_per_node) nodes)")->capture_default_str();
    c->add_option("--batch-per-gpu", batch_, "Samples per GPU per iteration")->required();
    c->add_flag("--layers", layers_, "Also print per-layer times (table format)");
    flags_.add_to(c);
    add_allow_unknown_ops(c, flags_.allow_unknown_ops);
    return c;
  }

  int run() override {
    Graph g = flags_.load_model(model_, batch_);
    ClusterSpec c = load_cluster(flags_.cluster);
    TrainingConfig cfg = flags_.config();
    cfg.gpus = gpus_;
    cfg.batch_per_gpu = batch_;
    Prediction p = predict(g, c, cfg);
    if (flags_.format == "json") emit(flags_.out, dump(prediction_json(p)));
    else if (flags_.format == "csv") emit(flags_.out, Table{prediction_columns(false), {prediction_row(p, false)}}.to_csv());
    else emit(flags_.out, prediction_text(p, layers_));
    return 0;
  }

 private:
  TrainingFlags flags_;
  std::string model_;
  int64_t gpus_ = 1, batch_ = 0;
  bool layers_ = false;
};

}  // namespace

std::unique_ptr<Command> make_predict_command() { return std::make_unique<PredictCommand>(); }

}  // namespace dtsim::cli
