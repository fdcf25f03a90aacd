#include <algorithm>

#include "cli/command.hpp"
#include "core/output.hpp"
#include "sim/strategy.hpp"

namespace dtsim::cli {
namespace {

class StrategiesCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* c = app.add_subcommand("strategies", "List the training strategies --strategy takes (docs/design.md §5), one line each");
    c->add_option("--format", format_, "Output format")->check(CLI::IsMember(kTableJsonCsv))->capture_default_str();
    c->add_option("--out", out_, "Write the output to FILE (atomically) instead of stdout");
    return c;
  }

  int run() override {
    Table t{{"strategy", "what it does", "what it trades away"}, {}};
    Json rows = Json::array();
    for (const auto& e : StrategyRegistry::get().entries()) {
      const std::string trade_off = e.make()->trade_off();
      t.rows.push_back({e.name, e.help, trade_off});
      rows.push_back({{"strategy", e.name}, {"summary", e.help}, {"trade_off", trade_off}});
    }
    if (format_ == "json") emit(out_, dump(rows));
    else if (format_ == "csv") emit(out_, t.to_csv());
    else {
      std::string text;
      size_t width = 0;  // the longest name and two spaces: every summary starts in one column
      for (const auto& r : t.rows) width = std::max(width, r[0].size() + 2);
      for (const auto& r : t.rows) text += r[0] + std::string(width - r[0].size(), ' ') + r[1] + "\n";
      emit(out_, text + "Defaults: configs/strategies.json; `dtsim strategies --format csv` adds what each trades away.\n");
    }
    return 0;
  }

 private:
  std::string format_ = "table", out_;
};

}  // namespace

std::unique_ptr<Command> make_strategies_command() { return std::make_unique<StrategiesCommand>(); }

}  // namespace dtsim::cli
