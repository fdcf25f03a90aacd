#pragma once
// Flags of the scaling-study features, shared by predict, sweep, plan, roofline and collective:
// hardware what-ifs, time and cost to train, and plots.
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "sim/whatif.hpp"
#include "study/study.hpp"

namespace dtsim::cli {

struct WhatIfFlags {
  // One text per axis of what_if_axes(), in that order; lists ("1,2,4", "0.5..4:x2") in sweeps.
  std::vector<std::string> values;
  std::vector<CLI::Option*> options;  // null for an axis the command does not offer
  // Adds a flag for each of `offered` (axes of what_if_axes(); collective offers only those that
  // reach a collective, collective_what_if_axes()).
  void add_to(CLI::App* c, bool lists, const std::vector<std::string>& offered = what_if_axes());
  // The axes given, with their values.
  std::vector<std::pair<std::string, std::vector<double>>> axes() const;
  // Every axis given must have one value (predict, roofline).
  WhatIf single() const;
  bool any() const;
  // --flops-scale for flops_scale.
  static std::string flag_of(const std::string& axis);
};

struct TrainFlags {
  std::string dataset_size;  // an integer: 1281167, 1.2e6 or 1M (parse_count)
  double epochs = 0, price = 0;
  CLI::Option *dataset_opt = nullptr, *epochs_opt = nullptr, *price_opt = nullptr;
  void add_to(CLI::App* c);
  // Overrides what `base` (a sweep file's "training") says with the flags given; checks the result.
  TrainGoal goal(TrainGoal base = {}) const;
};

}  // namespace dtsim::cli
