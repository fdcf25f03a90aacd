#pragma once
// The pictures of a study, drawn by gnuplot (report/plot.hpp). Each returns a rendered Plot that
// the caller commits once everything else has succeeded.
#include <string>

#include "report/plot.hpp"
#include "report/roofline_report.hpp"
#include "study/study.hpp"

namespace dtsim {

// How the roofline plot draws a kernel kind: a colour ("#rrggbb") and a gnuplot point type, each
// kind its own.
struct KindStyle {
  const char* colour;
  int point_type;
};
const KindStyle& kind_style(KernelKind k);

// Throughput and scaling efficiency against GPU count, a line per series (model, batch per GPU,
// what-if: whichever of them vary); configurations that do not fit in GPU memory are ringed.
Plot scaling_plot(const SweepResult& res, const std::string& path, const std::string& flag);

// The iteration split into compute, optimizer, exposed communication and host-bound idle, as
// stacked bars (percent of the iteration; the iteration time in each label). At most
// kMaxBreakdownBars bars: beyond that, the first what-if's rows at evenly spread GPU counts.
constexpr size_t kMaxBreakdownBars = 64;
Plot breakdown_plot(const SweepResult& res, const std::string& path, const std::string& flag);

// The kernels as points on the GPU's roofline, one colour and point shape per kernel kind.
Plot roofline_plot(const RooflineReport& r, const std::string& path, const std::string& flag);

}  // namespace dtsim
