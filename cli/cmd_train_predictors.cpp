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
    check_data_folder(app_->remaining());
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
  // --data as the trainer reads it (its kernels/ subfolder if present): a folder holding the
  // harness's CSVs. Checked here, before the trainer takes the folder's name for a GPU's.
  static void check_data_folder(const std::vector<std::string>& args) {
    namespace fs = std::filesystem;
    std::string data;
    bool files = false;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--data" && i + 1 < args.size()) data = args[i + 1];
      else if (args[i].rfind("--data=", 0) == 0) data = args[i].substr(7);
      files |= args[i] == "--files" || args[i].rfind("--files=", 0) == 0;
    }
    if (data.empty() || files) return;  // the trainer reports a missing --data; --files names its own CSVs
    std::error_code ec;
    if (!fs::is_directory(data, ec)) throw InputError("--data", "'" + data + "' is not a folder");
    const std::string dir = fs::is_directory(data + "/kernels", ec) ? data + "/kernels" : data;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      auto ends = [&](const std::string& tail) { return name.size() > tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0; };
      if (ends(".csv") || ends(".csv.gz")) return;
    }
    throw InputError("--data", "no measurement CSVs (*.csv, *.csv.gz) found in '" + dir + "'");
  }

  CLI::App* app_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> make_train_predictors_command() { return std::make_unique<TrainPredictorsCommand>(); }

}  // namespace dtsim::cli
