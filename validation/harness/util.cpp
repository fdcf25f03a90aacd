#include "util.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>

namespace dh {

static bool is_sticky(cudaError_t c) {
  switch (c) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

CudaError::CudaError(const std::string& what, cudaError_t c)
    : Error(what), code(c), sticky(is_sticky(c)) {}

void check_cuda(cudaError_t e, const char* expr, const char* file, int line) {
  if (e == cudaSuccess) return;
  std::ostringstream os;
  os << file << ":" << line << ": " << expr << ": " << cudaGetErrorName(e) << " ("
     << cudaGetErrorString(e) << ")";
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it
    throw NoMemory(os.str());
  }
  throw CudaError(os.str(), e);
}

// ---------------------------------------------------------------- arguments
Args::Args(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) throw Error("unexpected argument '" + a + "' (options are --key value)");
    std::string key = a.substr(2), val = "1";
    auto eq = key.find('=');
    if (eq != std::string::npos) {
      val = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
      val = argv[++i];
    }
    kv_[key] = val;
    used_[key] = false;
  }
}
bool Args::has(const std::string& k) const {
  auto it = kv_.find(k);
  if (it == kv_.end()) return false;
  used_[k] = true;
  return true;
}
std::string Args::str(const std::string& k, const std::string& def) const {
  auto it = kv_.find(k);
  if (it == kv_.end()) return def;
  used_[k] = true;
  return it->second;
}
double Args::num(const std::string& k, double def) const {
  std::string s = str(k, "");
  if (s.empty()) return def;
  try {
    size_t pos = 0;
    double v = std::stod(s, &pos);
    if (pos != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (...) {
    throw Error("--" + k + ": not a number: '" + s + "'");
  }
}
long long Args::integer(const std::string& k, long long def) const {
  double v = num(k, static_cast<double>(def));
  if (v != std::floor(v)) throw Error("--" + k + ": not an integer");
  return static_cast<long long>(v);
}
std::vector<std::string> Args::list(const std::string& k, const std::string& def) const {
  std::vector<std::string> out;
  for (auto& s : split(str(k, def), ','))
    if (!s.empty()) out.push_back(s);
  return out;
}
std::vector<long long> Args::int_list(const std::string& k, const std::string& def) const {
  std::vector<long long> out;
  for (auto& s : list(k, def)) {
    try {
      out.push_back(std::stoll(s));
    } catch (...) {
      throw Error("--" + k + ": not an integer: '" + s + "'");
    }
  }
  return out;
}
std::vector<std::string> Args::unused() const {
  std::vector<std::string> out;
  for (auto& [k, u] : used_)
    if (!u) out.push_back(k);
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// ---------------------------------------------------------------- statistics
double percentile(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  double pos = q * (v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  double f = pos - lo;
  return v[lo] * (1 - f) + v[hi] * f;
}

Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.repeats = static_cast<int>(v.size());
  s.min = v.front();
  s.max = v.back();
  s.median = percentile(v, 0.5);
  s.p10 = percentile(v, 0.1);
  s.p90 = percentile(v, 0.9);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / v.size();
  return s;
}

std::string sig4(double x) {
  if (x == 0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

// ---------------------------------------------------------------- output
Csv::Csv(const std::string& path, const std::vector<std::string>& header)
    : path_(path), ncol_(header.size()) {
  f_ = std::fopen(path.c_str(), "w");
  if (!f_) throw Error("cannot write " + path + ": " + std::strerror(errno));
  for (size_t i = 0; i < header.size(); ++i) std::fprintf(f_, "%s%s", i ? "," : "", header[i].c_str());
  std::fprintf(f_, "\n");
  std::fflush(f_);
}
Csv::~Csv() {
  if (f_) std::fclose(f_);
}
void Csv::row(const std::vector<std::string>& cells) {
  if (!f_) return;
  if (cells.size() != ncol_) throw Error("internal: CSV row of " + std::to_string(cells.size()) +
                                          " cells for " + std::to_string(ncol_) + " columns in " + path_);
  for (size_t i = 0; i < cells.size(); ++i) std::fprintf(f_, "%s%s", i ? "," : "", cells[i].c_str());
  std::fprintf(f_, "\n");
  std::fflush(f_);
  ++rows_;
}

void make_dirs(const std::string& path) {
  std::string cur;
  for (auto& part : split(path, '/')) {
    cur += part;
    if (!cur.empty() && cur != ".") {
      if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST)
        throw Error("cannot create folder " + cur + ": " + std::strerror(errno));
    }
    cur += '/';
  }
}

int emulate_node_of_rank(int rank) {
  const char* v = std::getenv("DTSIM_EMULATE_GPUS_PER_NODE");
  if (!v) return 0;
  char* end = nullptr;
  const long g = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || g < 1 || g > 1024)
    throw Error(std::string("DTSIM_EMULATE_GPUS_PER_NODE: a whole number of GPUs per node (1..1024), not '") + v + "'");
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  const std::string id = std::string(host) + "-emulated-node-" + std::to_string(rank / g);
  setenv("NCCL_HOSTID", id.c_str(), 1);
  return int(g);
}

double wall_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string utc_now_iso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// ---------------------------------------------------------------- arena
Arena::Arena(size_t bytes) : size_(bytes) {
  DH_CUDA(cudaMalloc(&base_, bytes));
}
Arena::~Arena() {
  if (base_) cudaFree(base_);
}
void* Arena::alloc(size_t bytes) {
  size_t start = (off_ + 255) & ~size_t(255);
  if (bytes > size_ || start > size_ - bytes)
    throw NoMemory("needs " + std::to_string((start + bytes) >> 20) + " MiB of a " +
                   std::to_string(size_ >> 20) + " MiB arena");
  off_ = start + bytes;
  return base_ + start;
}

// ---------------------------------------------------------------- timing
Stats time_on_gpu(cudaStream_t stream, const std::function<void()>& op, const TimeCfg& cfg) {
  static std::vector<cudaEvent_t> ev;
  static int ev_device = -1;
  int dev = 0;
  DH_CUDA(cudaGetDevice(&dev));
  size_t need = static_cast<size_t>(std::max(cfg.max_repeats, 2)) + 1;
  if (ev_device != dev) {
    ev.clear();  // events of another device are leaked on purpose (process-lifetime)
    ev_device = dev;
  }
  while (ev.size() < need) {
    cudaEvent_t e;
    DH_CUDA(cudaEventCreate(&e));
    ev.push_back(e);
  }
  // First run: errors surface here; then a timed probe to size the repeats.
  op();
  DH_CUDA(cudaStreamSynchronize(stream));
  DH_CUDA(cudaEventRecord(ev[0], stream));
  op();
  DH_CUDA(cudaEventRecord(ev[1], stream));
  DH_CUDA(cudaEventSynchronize(ev[1]));
  float ms = 0;
  DH_CUDA(cudaEventElapsedTime(&ms, ev[0], ev[1]));
  double t1 = std::max(ms * 1e-3, 1e-7);
  for (int i = 0; i < cfg.warmup - 1; ++i) op();
  int n = static_cast<int>(std::ceil(cfg.target_s / t1));
  n = std::max(cfg.min_repeats, std::min(cfg.max_repeats, n));
  // Keep the GPU busy while the host enqueues (host cost of a library call: up to ~50 us).
  if (t1 < 200e-6) launch_spin(stream, std::min(n * 60e-6, 0.02));
  DH_CUDA(cudaEventRecord(ev[0], stream));
  for (int i = 0; i < n; ++i) {
    op();
    DH_CUDA(cudaEventRecord(ev[i + 1], stream));
  }
  DH_CUDA(cudaEventSynchronize(ev[n]));
  DH_CUDA(cudaGetLastError());
  std::vector<double> t(n);
  for (int i = 0; i < n; ++i) {
    DH_CUDA(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
    t[i] = ms * 1e-3;
  }
  Stats s = stats_of(std::move(t));
  if (cfg.back_to_back) {
    if (t1 < 200e-6) launch_spin(stream, std::min(n * 60e-6, 0.02));
    DH_CUDA(cudaEventRecord(ev[0], stream));
    const auto host_start = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) op();
    s.host_enqueue = std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count() / n;
    DH_CUDA(cudaEventRecord(ev[1], stream));
    DH_CUDA(cudaEventSynchronize(ev[1]));
    DH_CUDA(cudaEventElapsedTime(&ms, ev[0], ev[1]));
    s.back_to_back = ms * 1e-3 / n;
  }
  return s;
}

size_t dtype_size(DType t) { return t == DType::F32 ? 4 : 2; }
const char* dtype_name(DType t) { return t == DType::F32 ? "fp32" : "bf16"; }

}  // namespace dh
