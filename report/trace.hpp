#pragma once
// The simulated iteration as a Chrome/Perfetto trace (the Trace Event Format's JSON object form:
// "traceEvents" with complete "X" events, times in microseconds), so that overlap can be seen: a
// host track (one span per kernel launch), the compute stream (iteration > forward / backward /
// optimizer > kernels), the communication stream (one all-reduce per gradient bucket) and a
// gradient-bucket track (each bucket from ready to the start of its all-reduce). Open it in
// https://ui.perfetto.dev or chrome://tracing.
#include "core/json_util.hpp"
#include "sim/predict.hpp"

namespace dtsim {

// Thread ids of the tracks.
enum TraceTrack { kTraceHost = 1, kTraceCompute = 2, kTraceComm = 3, kTraceBuckets = 4 };

// `p` must have been predicted with TrainingConfig::record_kernels set; each kernel's span records
// how long its launch held the host.
Json chrome_trace(const Prediction& p, double iteration_overhead_s);

}  // namespace dtsim
