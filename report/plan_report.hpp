#pragma once
// dtsim plan's answer as text, CSV and JSON, and its picture: the fastest and the cheapest ways to
// train with what holds each back, the Pareto front and the top K (study/plan.hpp finds them).
#include <string>

#include "report/plot.hpp"
#include "study/plan.hpp"

namespace dtsim {

std::string plan_text(const PlanSpec& s, const PlanResult& r);
std::string plan_csv(const PlanResult& r);
std::string plan_json(const PlanSpec& s, const PlanResult& r);
// The Pareto front (time to train against cost) drawn to `path` (FILE.png or FILE.svg), `flag` naming
// it in errors; committed by the caller once every output is written.
Plot plan_front_plot(const PlanSpec& s, const PlanResult& r, const std::string& flag, const std::string& path);

}  // namespace dtsim
