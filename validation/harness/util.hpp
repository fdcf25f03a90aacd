// Shared helpers of the dtsim harness: errors, command-line arguments, statistics, CSV output,
// time budgets, a device memory arena and CUDA-event timing. Used by every mode (kernels,
// collective, and the planned train mode).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace dh {

constexpr const char* kHarnessVersion = "0.1.0";

// ---------------------------------------------------------------- errors
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A CUDA runtime error; `sticky` when the context is unusable afterwards (the run must stop).
struct CudaError : Error {
  CudaError(const std::string& what, cudaError_t c);
  cudaError_t code;
  bool sticky;
};
// The shape does not fit (device arena too small, or cudaMalloc failed): skip it, record it.
struct NoMemory : Error {
  using Error::Error;
};
// The library refused the shape (e.g. CUDNN_STATUS_NOT_SUPPORTED): skip it, record it.
struct NotSupported : Error {
  using Error::Error;
};

void check_cuda(cudaError_t e, const char* expr, const char* file, int line);
#define DH_CUDA(x) ::dh::check_cuda((x), #x, __FILE__, __LINE__)
// After a kernel launch: the launch error, if any.
#define DH_LAUNCH() ::dh::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

// ---------------------------------------------------------------- arguments
class Args {
 public:
  Args(int argc, char** argv, int first);  // parses "--key value" and "--flag" from argv[first..]
  bool has(const std::string& k) const;
  std::string str(const std::string& k, const std::string& def) const;
  double num(const std::string& k, double def) const;
  long long integer(const std::string& k, long long def) const;
  std::vector<std::string> list(const std::string& k, const std::string& def) const;  // comma list
  std::vector<long long> int_list(const std::string& k, const std::string& def) const;
  // Keys that were given but never read: reported as errors by the caller.
  std::vector<std::string> unused() const;

 private:
  std::map<std::string, std::string> kv_;
  mutable std::map<std::string, bool> used_;
};

std::vector<std::string> split(const std::string& s, char sep);

// ---------------------------------------------------------------- statistics
struct Stats {
  double median = 0, min = 0, max = 0, p10 = 0, p90 = 0, mean = 0;
  int repeats = 0;
  // Mean time per call of the same `repeats` calls enqueued with no event between them (TimeCfg::
  // back_to_back); NaN when not measured. What a kernel costs inside a step, where nothing separates it
  // from its neighbours.
  double back_to_back = std::numeric_limits<double>::quiet_NaN();
  // Host wall time per call of that back-to-back loop, the GPU kept busy by a spin kernel: what one
  // call costs the host to issue (the library's work and the launch), not GPU time.
  double host_enqueue = std::numeric_limits<double>::quiet_NaN();
  double spread() const { return p90 - p10; }  // the "spread" column everywhere
};
Stats stats_of(std::vector<double> v);
double percentile(const std::vector<double>& sorted, double q);  // linear interpolation

// 4 significant digits, as written into every data file.
std::string sig4(double x);

// ---------------------------------------------------------------- output
// A CSV file written row by row and flushed after each row, so a run cut short keeps its rows.
class Csv {
 public:
  Csv() = default;
  Csv(const std::string& path, const std::vector<std::string>& header);
  ~Csv();
  Csv(const Csv&) = delete;
  Csv& operator=(const Csv&) = delete;
  void row(const std::vector<std::string>& cells);
  long rows() const { return rows_; }
  const std::string& path() const { return path_; }

 private:
  std::FILE* f_ = nullptr;
  std::string path_;
  size_t ncol_ = 0;
  long rows_ = 0;
};

void make_dirs(const std::string& path);  // mkdir -p
double wall_s();                          // monotonic seconds
std::string utc_now_iso();

// Nodes emulated on one host: with DTSIM_EMULATE_GPUS_PER_NODE=G, every G consecutive ranks
// get a host identity of their own (NCCL_HOSTID), so NCCL sees nodes of G GPUs: its intra-node
// transports (P2P over NVLink) inside a node and its network transport between nodes (sockets over
// loopback under validation/scripts/run_emulated.sh). Call before the process's first NCCL call.
// Returns G, or 0 when the variable is unset.
int emulate_node_of_rank(int rank);

// A wall-clock budget that a sweep spends; `left()` never goes below zero.
class Budget {
 public:
  explicit Budget(double seconds) : start_(wall_s()), total_(seconds) {}
  double elapsed() const { return wall_s() - start_; }
  double left() const { double l = total_ - elapsed(); return l > 0 ? l : 0; }
  bool spent() const { return left() <= 0; }
  double total() const { return total_; }

 private:
  double start_, total_;
};

// ---------------------------------------------------------------- device memory
// One large cudaMalloc, handed out by a bump pointer and reset after each shape: no per-shape
// cudaMalloc/cudaFree (slow, synchronising), and "does not fit" is an ordinary, recoverable case.
class Arena {
 public:
  explicit Arena(size_t bytes);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  void* alloc(size_t bytes);  // throws NoMemory when it does not fit
  void reset() { off_ = 0; }
  size_t capacity() const { return size_; }
  size_t used() const { return off_; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0, off_ = 0;
};

// ---------------------------------------------------------------- timing
struct TimeCfg {
  int warmup = 2;           // untimed runs after the first (which also checks errors)
  int min_repeats = 5;
  int max_repeats = 50;
  double target_s = 0.03;   // aim for about this much timed GPU time per measurement
  bool back_to_back = false;  // also time the repeats with one event pair around all of them
};

// Times `op` (which enqueues GPU work on `stream`) with one CUDA event pair per repeat, after
// warm-up. A short spin kernel is queued ahead of the timed launches so that the host enqueues
// them all while the GPU is busy: each repeat measures GPU time, not host launch latency.
Stats time_on_gpu(cudaStream_t stream, const std::function<void()>& op, const TimeCfg& cfg);

// Device-side helpers (device_kernels.cu).
void launch_spin(cudaStream_t s, double seconds);
enum class DType { F32, BF16 };
size_t dtype_size(DType t);
const char* dtype_name(DType t);
// Fills with pseudo-random values in [lo, hi) (never zeros-only), deterministic in `seed`.
void fill_uniform(cudaStream_t s, void* p, size_t n, DType t, uint64_t seed, float lo = -1.f,
                  float hi = 1.f);

}  // namespace dh
