#pragma once
// One subcommand of dtsim: it declares its flags on a CLI11 subcommand and runs once parsed.
// Commands are listed in cli/commands.cpp; each lives in its own cli/cmd_*.cpp.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/json_util.hpp"
#include "model/predict.hpp"

namespace dtsim::cli {

class Command {
 public:
  virtual ~Command() = default;
  // Adds the subcommand and its flags to `app`; returns it.
  virtual CLI::App* add(CLI::App& app) = 0;
  // Runs after a successful parse; the return value is the exit code. Bad input throws InputError.
  virtual int run() = 0;
};

std::vector<std::unique_ptr<Command>> all_commands();

// Helpers shared by the commands.
extern const std::set<std::string> kTableJsonCsv;
// Prints to stdout, or writes FILE atomically when `out_path` is not empty.
void emit(const std::string& out_path, const std::string& text);
std::string dump(const Json& j);

// Flags that predict and sweep share.
struct TrainingFlags {
  std::string cluster = "h100-sxm";
  std::string precision = "fp32";
  std::string algo = "ring";
  std::string format = "table";
  std::string out;
  bool no_overlap = false;
  void add_to(CLI::App* c);
  TrainingConfig config() const;
};

}  // namespace dtsim::cli
