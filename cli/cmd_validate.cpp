// dtsim validate: predicted against measured iteration times (study/validate.hpp).
#include "cli/command.hpp"
#include "compute/compute_model.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "sim/framework.hpp"
#include "study/validate.hpp"

namespace dtsim::cli {
namespace {

class ValidateCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* c = app.add_subcommand("validate", "Predict measured runs (dtsim-measured-run/1 JSON) and report the errors");
    c->add_option("--measured", measured_, "Measured-run JSON file or folder of them (repeatable)")->required();
    c->add_option("--framework", opt_.framework,
                  "Framework profile (configs/frameworks: " + join_names(framework_presets()) + ") or JSON file; default: each run's own framework's (" +
                      std::string(kDefaultFrameworkProfile) + " for PyTorch's runs, harness for the harness's)");
    c->add_option("--cluster", opt_.cluster,
                  "Cluster preset name or JSON file to predict every run on (its GPU must be the runs'); default: each run's GPU preset")
        ->check([](const std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); });
    c->add_option("--compute-model", opt_.compute_model, "Kernel times: " + join_names(compute_model_names()))->capture_default_str();
    c->add_option("--algo", opt_.algo, "All-reduce algorithm")->capture_default_str();
    c->add_flag("--layers", layers_, "Also print per-layer measured and predicted times (table format)");
    c->add_option("--format", format_, "Output format")->check(CLI::IsMember(kTableJsonCsv))->capture_default_str();
    c->add_option("--out", out_, "Write the output to FILE (atomically) instead of stdout");
    return c;
  }

  int run() override {
    std::vector<MeasuredRun> runs;
    for (const auto& f : measured_run_files(measured_)) runs.push_back(parse_measured_run(load_json_file(f), f));
    const auto rows = validate_runs(runs, opt_);
    std::string text;
    if (format_ == "json") text = dump(validation_json(rows));
    else if (format_ == "csv") text = validation_csv(rows);
    else text = validation_table(rows, layers_);
    emit(out_, text);
    return 0;  // errors are the report, not a failure
  }

 private:
  std::vector<std::string> measured_;
  ValidationOptions opt_;
  std::string format_ = "table", out_;
  bool layers_ = false;
};

}  // namespace

std::unique_ptr<Command> make_validate_command() { return std::make_unique<ValidateCommand>(); }

}  // namespace dtsim::cli
