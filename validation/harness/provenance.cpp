#include "provenance.hpp"

#include <cublas_v2.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

namespace dh {

namespace {

// ---- NVML, loaded at run time (the build machines have no NVML headers or stubs)
typedef struct nvmlDevice_st* nvmlDevice_t;
struct Nvml {
  void* lib = nullptr;
  int (*init)() = nullptr;
  int (*driver_version)(char*, unsigned) = nullptr;
  int (*by_pci)(const char*, nvmlDevice_t*) = nullptr;
  int (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  int (*max_clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  int (*app_clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  int (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  int (*power)(nvmlDevice_t, unsigned*) = nullptr;
  int (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;
  int (*throttle)(nvmlDevice_t, unsigned long long*) = nullptr;
  bool ok = false;
  Nvml() {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    auto sym = [&](const char* n) { return dlsym(lib, n); };
    init = reinterpret_cast<int (*)()>(sym("nvmlInit_v2"));
    driver_version = reinterpret_cast<int (*)(char*, unsigned)>(sym("nvmlSystemGetDriverVersion"));
    by_pci = reinterpret_cast<int (*)(const char*, nvmlDevice_t*)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
    clock = reinterpret_cast<int (*)(nvmlDevice_t, int, unsigned*)>(sym("nvmlDeviceGetClockInfo"));
    max_clock = reinterpret_cast<int (*)(nvmlDevice_t, int, unsigned*)>(sym("nvmlDeviceGetMaxClockInfo"));
    app_clock = reinterpret_cast<int (*)(nvmlDevice_t, int, unsigned*)>(sym("nvmlDeviceGetApplicationsClock"));
    temperature = reinterpret_cast<int (*)(nvmlDevice_t, int, unsigned*)>(sym("nvmlDeviceGetTemperature"));
    power = reinterpret_cast<int (*)(nvmlDevice_t, unsigned*)>(sym("nvmlDeviceGetPowerUsage"));
    power_limit = reinterpret_cast<int (*)(nvmlDevice_t, unsigned*)>(sym("nvmlDeviceGetEnforcedPowerLimit"));
    throttle = reinterpret_cast<int (*)(nvmlDevice_t, unsigned long long*)>(
        sym("nvmlDeviceGetCurrentClocksEventReasons"));
    if (!throttle)
      throttle = reinterpret_cast<int (*)(nvmlDevice_t, unsigned long long*)>(
          sym("nvmlDeviceGetCurrentClocksThrottleReasons"));
    ok = init && by_pci && clock && init() == 0;
  }
  nvmlDevice_t device(int cuda_dev) {
    if (!ok) return nullptr;
    char bus[64] = {0};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_dev) != cudaSuccess) return nullptr;
    nvmlDevice_t d = nullptr;
    if (by_pci(bus, &d) != 0) return nullptr;
    return d;
  }
};
Nvml& nvml() {
  static Nvml n;
  return n;
}
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };

std::string lib_path_of(const void* fn) {
  Dl_info info{};
  if (fn && dladdr(fn, &info) && info.dli_fname) {
    char buf[4096];
    if (realpath(info.dli_fname, buf)) return buf;
    return info.dli_fname;
  }
  return "";
}

std::string ver3(int v, int major_div, int minor_div) {
  return std::to_string(v / major_div) + "." + std::to_string((v % major_div) / minor_div) + "." +
         std::to_string(v % minor_div);
}

}  // namespace

nlohmann::json gpu_clocks_now(int device) {
  nlohmann::json j = nlohmann::json::object();
  Nvml& n = nvml();
  nvmlDevice_t d = n.device(device);
  if (!d) return j;
  unsigned v = 0;
  if (n.clock(d, NVML_CLOCK_SM, &v) == 0) j["sm_mhz"] = v;
  if (n.clock(d, NVML_CLOCK_MEM, &v) == 0) j["mem_mhz"] = v;
  if (n.temperature && n.temperature(d, 0, &v) == 0) j["temperature_c"] = v;
  if (n.power && n.power(d, &v) == 0) j["power_w"] = v / 1000.0;
  unsigned long long r = 0;
  if (n.throttle && n.throttle(d, &r) == 0) j["clock_event_reasons"] = r;
  return j;
}

std::string gpu_short_name(int device) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return "unknown-gpu";
  std::string name = p.name;
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("H100")) return has("PCIe") ? "h100-pcie" : has("NVL") ? "h100-nvl" : "h100-sxm";
  if (has("H200")) return has("NVL") ? "h200-nvl" : "h200-sxm";
  std::string out;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(c));
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  if (out.rfind("nvidia-", 0) == 0) out = out.substr(7);
  return out;
}

nlohmann::json collect_provenance(int device, const Args& args, const std::string& mode) {
  nlohmann::json j;
  j["harness"] = {{"name", "dtsim-harness"}, {"version", kHarnessVersion}, {"mode", mode}};
  std::string commit = args.str("git-commit", "");
  if (commit.empty() && std::getenv("DTSIM_GIT_COMMIT")) commit = std::getenv("DTSIM_GIT_COMMIT");
  j["git_commit"] = commit.empty() ? "unknown" : commit;
  j["date_utc"] = utc_now_iso();
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  j["host"] = host;

  int ndev = 0;
  cudaGetDeviceCount(&ndev);
  j["visible_gpus"] = ndev;
  cudaDeviceProp p{};
  DH_CUDA(cudaGetDeviceProperties(&p, device));
  nlohmann::json g;
  g["index"] = device;
  g["name"] = p.name;
  g["short_name"] = gpu_short_name(device);
  g["compute_capability"] = std::to_string(p.major) + "." + std::to_string(p.minor);
  g["sm_count"] = p.multiProcessorCount;
  g["memory_bytes"] = p.totalGlobalMem;
  g["l2_bytes"] = p.l2CacheSize;
  g["memory_bus_bits"] = p.memoryBusWidth;
  int v = 0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, device) == cudaSuccess) g["max_sm_clock_mhz_cuda"] = v / 1000;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, device) == cudaSuccess)
    g["memory_clock_mhz_cuda"] = v / 1000;
  char bus[64] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) == cudaSuccess) g["pci_bus_id"] = bus;
  Nvml& n = nvml();
  if (nvmlDevice_t d = n.device(device)) {
    unsigned c = 0;
    if (n.max_clock && n.max_clock(d, NVML_CLOCK_SM, &c) == 0) g["max_sm_clock_mhz"] = c;
    if (n.max_clock && n.max_clock(d, NVML_CLOCK_MEM, &c) == 0) g["max_mem_clock_mhz"] = c;
    if (n.app_clock && n.app_clock(d, NVML_CLOCK_SM, &c) == 0) g["application_sm_clock_mhz"] = c;
    if (n.power_limit && n.power_limit(d, &c) == 0) g["power_limit_w"] = c / 1000.0;
    g["clocks_at_start"] = gpu_clocks_now(device);
  } else {
    g["nvml"] = "not available";
  }
  j["gpu"] = g;

  nlohmann::json sw;
  if (n.ok && n.driver_version) {
    char dv[96] = {0};
    if (n.driver_version(dv, sizeof dv) == 0) sw["driver"] = dv;
  }
  if (cudaDriverGetVersion(&v) == cudaSuccess) sw["cuda_driver_api"] = ver3(v * 10, 10000, 100);
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) sw["cuda_runtime"] = ver3(v * 10, 10000, 100);
  size_t cv = cudnnGetVersion();
  sw["cudnn"] = std::to_string(cv / 10000) + "." + std::to_string((cv % 10000) / 100) + "." + std::to_string(cv % 100);
  sw["cudnn_compiled"] = std::to_string(CUDNN_MAJOR) + "." + std::to_string(CUDNN_MINOR) + "." +
                         std::to_string(CUDNN_PATCHLEVEL);
  int maj = 0, min = 0, pat = 0;
  cublasGetProperty(MAJOR_VERSION, &maj);
  cublasGetProperty(MINOR_VERSION, &min);
  cublasGetProperty(PATCH_LEVEL, &pat);
  sw["cublas"] = std::to_string(maj) + "." + std::to_string(min) + "." + std::to_string(pat);
  int nv = 0;
  ncclGetVersion(&nv);
  sw["nccl"] = std::to_string(nv / 10000) + "." + std::to_string((nv % 10000) / 100) + "." + std::to_string(nv % 100);
  sw["nccl_compiled"] = std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH);
  sw["libraries"] = {
      {"cudnn", lib_path_of(reinterpret_cast<const void*>(&cudnnGetVersion))},
      {"cublas", lib_path_of(reinterpret_cast<const void*>(&cublasGetProperty))},
      {"nccl", lib_path_of(reinterpret_cast<const void*>(&ncclGetVersion))},
      {"cudart", lib_path_of(reinterpret_cast<const void*>(&cudaRuntimeGetVersion))},
  };
  j["software"] = sw;
  nlohmann::json env;
  for (const char* k : {"NVIDIA_TF32_OVERRIDE", "CUDA_VISIBLE_DEVICES", "CUBLAS_WORKSPACE_CONFIG", "CUDNN_LOGLEVEL_DBG"})
    if (const char* e = std::getenv(k)) env[k] = e;
  // Every NCCL_* setting: the transport (NCCL_NET=Socket, NCCL_P2P_DISABLE, ...) and its threads and
  // sockets decide what a collective measured, as much as the GPU does (emulated clusters).
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if ((kv.rfind("NCCL_", 0) == 0 || kv.rfind("DTSIM_EMULATE_", 0) == 0) && eq != std::string::npos)
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  j["environment"] = env;
  return j;
}

void write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream f(path);
  if (!f) throw Error("cannot write " + path);
  f << j.dump(2) << "\n";
}

}  // namespace dh
