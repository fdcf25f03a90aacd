#pragma once
// Calibration: fit the latency and bandwidth constants of NCCL's model (collectives.nccl) to
// measured collective timings, and say how far the fitted model is from every measurement.
#include <string>
#include <vector>

#include "network/cluster.hpp"
#include "network/measured.hpp"

namespace dtsim {

struct CalibratedPoint {
  MeasuredPoint measured;
  double before_s = 0;  // the cluster's model as given
  double after_s = 0;   // fitted
  std::string algo, protocol;
  double error() const { return after_s / measured.time_s - 1; }
  double error_before() const { return before_s / measured.time_s - 1; }
};

struct CalibrationResult {
  NcclTuning tuning;                  // the fitted constants
  std::vector<std::string> fitted;    // which constants the data could pin down
  std::vector<CalibratedPoint> points;
  double median_abs_error = 0, max_abs_error = 0;
  double median_abs_error_before = 0, max_abs_error_before = 0;
  // Empty, or why the fit was held back: the least-squares fit made some measurement worse than the
  // cluster's constants by more than 2 points of relative error, and was refitted so that none is.
  std::string held_back;
  // Empty, or which fitted link efficiency ended at its ceiling (kCeilingEfficiency or more): the
  // measurements moved about as much as the cluster's stated link allows, so the stated rate, not the
  // data, capped the fit (a 100 Gb/s nominal NIC under a network that moved 13 GB/s of bus bandwidth).
  std::string at_ceiling;
  // The constants the data could not pin down, a line each: which, why (the fit ran it to the end of
  // its range, or no point depends on it) and what to measure. Every fitted constant stays within
  // the cluster format's range either way.
  std::vector<std::string> unpinned;
};

// Fits what the points can identify: intra-node latencies, link efficiency, LL/LL128 bandwidth
// and channels from single-node runs; network latencies and efficiency from multi-node runs.
// Minimises the log error (relative error, as the targets are stated; squared up to 10%, linear
// beyond, so that a size where NCCL runs a dearer protocol than the cheapest does not drag the rest)
// with Nelder-Mead within each constant's range in the cluster format (a step beyond it is held at
// its end), and does no harm: should that fit leave any point more than 2 points of
// |relative error| worse than the cluster's constants do, it is refitted with a penalty on such
// points (held_back says so).
CalibrationResult calibrate(const ClusterSpec& c, const std::vector<MeasuredPoint>& points);

// The model's time for one measured configuration under `t`.
CollectiveEstimate predict_measured(const ClusterSpec& c, const NcclTuning& t, const MeasuredPoint& m);

// The cluster document with collectives.nccl replaced by `r`'s constants, the calibration's
// record under collectives.nccl.calibration and a line in sources.
Json calibrated_cluster_json(const Json& cluster_doc, const CalibrationResult& r, const std::vector<std::string>& files, const std::string& gpu);

// collectives.nccl as JSON, in the units of the cluster format (inverse of its parser).
Json nccl_tuning_json(const NcclTuning& t);

}  // namespace dtsim
