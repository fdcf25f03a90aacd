#pragma once
// How predictions are written out: JSON objects, table rows and CSV, shared by predict and sweep.
#include <string>
#include <vector>

#include "common/json_util.hpp"
#include "common/output.hpp"
#include "model/predict.hpp"

namespace dtsim {

// The scalar fields of a prediction (what a sweep row holds).
Json prediction_summary_json(const Prediction& p);
// The summary plus `layers` (name, fwd_s, bwd_s, grad_bytes) and `buckets`.
Json prediction_json(const Prediction& p);

// Columns of a prediction as a table or CSV row: `human` picks readable units.
std::vector<std::string> prediction_columns(bool human);
std::vector<std::string> prediction_row(const Prediction& p, bool human);

// The multi-line account `dtsim predict` prints.
std::string prediction_text(const Prediction& p, bool with_layers);

Json model_summary_json(const Graph& g);

}  // namespace dtsim
