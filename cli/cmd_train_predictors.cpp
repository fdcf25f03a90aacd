// `dtsim train-predictors` hands over to dtsim-train-predictors, built beside dtsim: the trainer links
// LibTorch, which dtsim itself does not load (it would cost every command its start-up time).
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unistd.h>

#include "cli/command.hpp"
#include "core/error.hpp"

namespace dtsim::cli {
namespace {

class TrainPredictorsCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* c = app.add_subcommand("train-predictors",
                                 "Train MLP kernel-time predictors on measured data (--data validation/data/GPU --out kernels_mlp/pretrained/GPU; "
                                 "see train-predictors --help)");
    c->prefix_command();
    c->set_help_flag();  // the trainer prints its own help
    app_ = c;
    return c;
  }

  int run() override {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) throw InputError("train-predictors", "cannot locate the dtsim executable");
    std::string trainer = (self.parent_path() / "dtsim-train-predictors").string();
    if (::access(trainer.c_str(), X_OK) != 0)
      throw InputError("train-predictors", trainer + " is not built (LibTorch missing? run scripts/setup.sh)");
    std::vector<std::string> args = {trainer};
    for (const auto& a : app_->remaining()) args.push_back(a);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(trainer.c_str(), argv.data());
    throw InputError("train-predictors", std::string("cannot run ") + trainer + ": " + std::strerror(errno));
  }

 private:
  CLI::App* app_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> make_train_predictors_command() { return std::make_unique<TrainPredictorsCommand>(); }

}  // namespace dtsim::cli
