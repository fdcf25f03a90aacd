#pragma once
// One subcommand of dtsim: it declares its flags on a CLI11 subcommand and runs once parsed.
// Commands are listed in cli/commands.cpp; each lives in its own cli/cmd_*.cpp.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/json_util.hpp"
#include "sim/predict.hpp"

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
// "a, b, c": help texts list names from the registries (strategies, framework profiles, ...), so
// that a new entry shows up without editing a hand-written string.
std::string join_names(const std::vector<std::string>& names);

// Flags that predict, sweep and plan share: the run's settings (RunSpec, sim/run_spec.hpp) and the
// output. --no-overlap sets `overlap` to false; a command that loads with load_model() adds
// --allow-unknown-ops itself (add_allow_unknown_ops), where its help lists it.
struct TrainingFlags : RunSpec {
  std::string format = "table";
  std::string out;
  struct StrategyFlag {
    const CLI::Option* option;
    const int* value;
    int min;
    std::string default_note;  // what leaving the flag out gives
  };
  std::vector<StrategyFlag> strategy_flags;  // filled by add_to
  const CLI::Option *algo_opt = nullptr, *overlap_opt = nullptr;
  void add_to(CLI::App* c);
  // The library reads 0 (--batches-to-wait: -1) as "take configs/strategies.json's default"; on the
  // command line the default is had by leaving the flag out, so a given 0 or negative is refused
  // (InputError naming the flag). config() calls it; commands that read strategy_params call it too.
  // It also refuses --algo and --no-overlap with a strategy that does not read them.
  void check_strategy_flags() const;
  TrainingConfig config() const;
  // Loads a zoo name, JSON or ONNX file; ONNX shape inference runs with `batch` (the per-GPU batch).
  Graph load_model(const std::string& name_or_path, int64_t batch) const;
};

// --cluster-nodes as given: InputError unless in [1, kMaxClusterNodes] (a given 0 is refused, not
// taken for "the preset's").
int64_t checked_cluster_nodes(int64_t nodes);

// --cluster-nodes of predict and collective: the nodes the cluster has, in place of the preset's, for
// jobs beyond its size (a --gpus-per-node what-if shrinks what it holds). Sweep and plan put it in
// their study's spec instead.
struct ClusterNodesFlag {
  int64_t nodes = 0;
  CLI::Option* option = nullptr;
  void add_to(CLI::App* c);
  // Sets c.nodes if the flag was given; InputError as checked_cluster_nodes.
  void apply(ClusterSpec& c) const;
};

// Adds --allow-unknown-ops to a command that takes --model.
void add_allow_unknown_ops(CLI::App* c, bool& flag);
// Adds --seq-len (a language model's sequence length, 0: the model's) to a command that takes --model.
void add_seq_len(CLI::App* c, int64_t& seq_len);
// Prints what an importer assumed (Graph::notes) on stderr, one line each, so that stdout stays data.
void print_notes(const Graph& g);

}  // namespace dtsim::cli
