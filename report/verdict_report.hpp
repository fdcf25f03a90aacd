#pragma once
// Verdicts in plain words and as JSON, from what study/verdict.hpp finds: per configuration, what
// bounds the iteration with its share, the communication (which collective, how many bytes, over
// which link), scaling and memory; per sweep, the split by bound, where scaling efficiency first
// drops below 90% and 75% and why, the what-ifs' effect, and the fastest configurations that fit.
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "study/verdict.hpp"

namespace dtsim {

// "compute-bound: 62% arithmetic-limited kernels, 23% memory-bound kernels, 13% exposed
// communication, 2% host-bound idle".
std::string short_verdict(const StudyRow& r);
// A paragraph: the bound with its numbers, the communication, scaling and memory.
std::string config_verdict(const StudyRow& r);

// Why a row's efficiency is what it is, in words.
std::string efficiency_reason(const StudyRow& r, const StudyRow* previous);
// Why efficiency drops where it does: efficiency_reason of the drop's row after its previous one.
std::string drop_reason(const SweepResult& res, const EfficiencyDrop& d);

// The sweep's verdict as text, one paragraph per line: the summary, a line per series, per what-if
// and per recommendation (none for a sweep without rows).
std::vector<std::string> sweep_verdict_lines(const SweepResult& res, const SweepVerdict& v);
// The same as JSON: summary, series, what_if_effects, recommendations and the lines as text (null
// for a sweep without rows).
Json sweep_verdict_json(const SweepResult& res, const SweepVerdict& v);

}  // namespace dtsim
