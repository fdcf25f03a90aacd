#include "cli/command.hpp"

namespace dtsim::cli {

std::unique_ptr<Command> make_models_command();
std::unique_ptr<Command> make_predict_command();
std::unique_ptr<Command> make_sweep_command();
std::unique_ptr<Command> make_plan_command();
std::unique_ptr<Command> make_collective_command();
std::unique_ptr<Command> make_calibrate_command();
std::unique_ptr<Command> make_roofline_command();
std::unique_ptr<Command> make_kernel_command();
std::unique_ptr<Command> make_train_predictors_command();
std::unique_ptr<Command> make_validate_command();
std::unique_ptr<Command> make_strategies_command();
std::unique_ptr<Command> make_grid_command();

// The order here is the order of `dtsim --help`.
std::vector<std::unique_ptr<Command>> all_commands() {
  std::vector<std::unique_ptr<Command>> c;
  c.push_back(make_predict_command());
  c.push_back(make_sweep_command());
  c.push_back(make_plan_command());
  c.push_back(make_strategies_command());
  c.push_back(make_grid_command());
  c.push_back(make_collective_command());
  c.push_back(make_calibrate_command());
  c.push_back(make_roofline_command());
  c.push_back(make_kernel_command());
  c.push_back(make_validate_command());
  c.push_back(make_models_command());
  c.push_back(make_train_predictors_command());
  return c;
}

}  // namespace dtsim::cli
