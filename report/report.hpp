#pragma once
// How predictions are written out: JSON objects, table rows and CSV, shared by predict and sweep.
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "core/output.hpp"
#include "sim/predict.hpp"
#include "study/study.hpp"

namespace dtsim {

// The scalar fields of a prediction (what a sweep row holds).
Json prediction_summary_json(const Prediction& p);
// The summary plus `layers` (name, fwd_s, bwd_s, grad_bytes) and `buckets`.
Json prediction_json(const Prediction& p);

// Columns of a prediction as a table or CSV row: `human` picks readable units.
std::vector<std::string> prediction_columns(bool human);
std::vector<std::string> prediction_row(const Prediction& p, bool human);

// The share of the GPU time that measured predictors priced outside their training range, and per
// kernel kind what priced it (measured predictors, the roofline), in words.
double extrapolated_share(const Prediction& p);
// "channels_last tensors, adamw, compile-cuda-graphs": what the prediction priced beside its size and precision.
std::string step_mode_text(const StepMode& m);
std::string priced_by_text(const Prediction& p);

// The multi-line account `dtsim predict` prints.
std::string prediction_text(const Prediction& p, bool with_layers);

Json model_summary_json(const Graph& g);

// Study rows (sweeps, and predict's extras): the prediction's summary plus the what-if, memory fit,
// a short verdict and, when asked for, time and cost to train.
Json study_row_json(const StudyRow& r);
// Table and CSV columns of study rows. `what_if` adds the what-if column (when a sweep varies it),
// `train` the time-to-train columns, `cost` the cost column.
struct StudyColumns {
  bool what_if = false, train = false, cost = false;
  bool strategy = false;  // a strategy other than dp: its name and communication share
  bool tokens = false;    // a language model: its sequence length and tokens per second
};
StudyColumns study_columns_for(const std::vector<StudyRow>& rows);
std::vector<std::string> study_columns(bool human, const StudyColumns& c);
std::vector<std::string> study_row_cells(const StudyRow& r, bool human, const StudyColumns& c);
// Per-GPU memory as a table: component, bytes, share of the GPU.
std::string memory_text(const MemoryFit& m);

}  // namespace dtsim
