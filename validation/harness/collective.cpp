// collective mode: NCCL all-reduce, reduce-scatter, all-gather and broadcast from 4 B to 1 GiB on
// P GPUs of one node, one process per GPU (as PyTorch DDP runs), timed and checked like nccl-tests.
//
// Process model: the parent never touches CUDA; it forks one child per GPU. Rank 0 makes the
// ncclUniqueId and hands it to the others through an anonymous shared-memory page, which also
// holds a barrier (with a timeout) and each rank's timings.
// Hangs: every wait for the GPU polls the stream and ncclCommGetAsyncError and aborts the
// communicator (ncclCommAbort) after --timeout-s; every NCCL call that could block the host
// (blocking init, lazy connection set-up at a first collective, finalize) runs under an alarm
// of --timeout-s that ends the rank with an error; the parent kills children that outlive
// --total-timeout-s. --comm blocking (default, as PyTorch) or nonblocking (ncclConfig blocking=0:
// a call may return ncclInProgress and must be waited for before the next, which adds host
// latency to every small collective).
#include <nccl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sched.h>

#include "device_kernels.hpp"
#include "modes.hpp"
#include "provenance.hpp"
#include "util.hpp"

namespace dh {

namespace {

constexpr int kMaxRanks = 16;
constexpr int kMaxSamples = 64;

struct Shared {
  // barrier: sense-reversing counter
  int count;
  int generation;
  int failed;
  ncclUniqueId id;
  double times[kMaxRanks][kMaxSamples];
  unsigned long long bad[kMaxRanks];
  char err[kMaxRanks][512];
};

struct Timeout : Error {
  using Error::Error;
};

// A watchdog for host-blocking NCCL calls: the rank ends with an error when the alarm fires.
extern "C" void on_alarm(int) {
  static const char msg[] = "dtsim-harness collective: an NCCL call did not return within --timeout-s; rank exits\n";
  if (write(2, msg, sizeof msg - 1) < 0) {
  }
  _exit(124);
}
struct Watchdog {
  explicit Watchdog(double seconds) {
    signal(SIGALRM, on_alarm);
    alarm(static_cast<unsigned>(std::ceil(std::max(1.0, seconds))));
  }
  ~Watchdog() { alarm(0); }
};

Shared* g_shared = nullptr;  // this process's view of the shared page (for "another rank failed")
bool peer_failed() { return g_shared && __atomic_load_n(&g_shared->failed, __ATOMIC_ACQUIRE); }

void barrier(Shared* sh, int nranks, double timeout_s) {
  int gen = __atomic_load_n(&sh->generation, __ATOMIC_ACQUIRE);
  if (__atomic_add_fetch(&sh->count, 1, __ATOMIC_ACQ_REL) == nranks) {
    __atomic_store_n(&sh->count, 0, __ATOMIC_RELAXED);
    __atomic_add_fetch(&sh->generation, 1, __ATOMIC_ACQ_REL);
    return;
  }
  double t0 = wall_s();
  while (__atomic_load_n(&sh->generation, __ATOMIC_ACQUIRE) == gen) {
    if (__atomic_load_n(&sh->failed, __ATOMIC_ACQUIRE)) throw Error("another rank failed");
    if (wall_s() - t0 > timeout_s) throw Timeout("barrier timed out after " + sig4(timeout_s) + " s");
    sched_yield();
  }
}

void check_nccl(ncclResult_t r, const char* expr) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  throw Error(std::string(expr) + ": " + ncclGetErrorString(r));
}
#define DH_NCCL(x) check_nccl((x), #x)

// Waits until the communicator is no longer "in progress" (non-blocking init / enqueue).
void wait_comm(ncclComm_t comm, double timeout_s, const char* what) {
  double t0 = wall_s();
  for (;;) {
    ncclResult_t st = ncclSuccess;
    DH_NCCL(ncclCommGetAsyncError(comm, &st));
    if (st == ncclSuccess) return;
    if (st != ncclInProgress) throw Error(std::string(what) + ": " + ncclGetErrorString(st));
    if (peer_failed()) {
      ncclCommAbort(comm);
      throw Error(std::string(what) + ": another rank failed; communicator aborted");
    }
    if (wall_s() - t0 > timeout_s) {
      ncclCommAbort(comm);
      throw Timeout(std::string(what) + ": timed out after " + sig4(timeout_s) + " s; communicator aborted");
    }
    sched_yield();
  }
}

// Waits for the stream, watching the communicator for asynchronous errors and the clock.
void wait_stream(cudaStream_t s, ncclComm_t comm, double timeout_s, const char* what) {
  double t0 = wall_s();
  for (;;) {
    cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) DH_CUDA(e);
    ncclResult_t st = ncclSuccess;
    DH_NCCL(ncclCommGetAsyncError(comm, &st));
    if (st != ncclSuccess && st != ncclInProgress) throw Error(std::string(what) + ": " + ncclGetErrorString(st));
    if (peer_failed()) {
      ncclCommAbort(comm);
      throw Error(std::string(what) + ": another rank failed; communicator aborted");
    }
    if (wall_s() - t0 > timeout_s) {
      ncclCommAbort(comm);
      throw Timeout(std::string(what) + ": timed out after " + sig4(timeout_s) + " s; communicator aborted");
    }
  }
}

struct Opts {
  std::vector<std::string> ops;
  size_t min_bytes, max_bytes;
  int samples, warmup;
  double timeout_s, target_s;
  bool check;
  bool blocking;
  std::string suffix;  // appended to file names (e.g. _nonblocking)
  std::string out;
};

// nccl-tests' size convention: all-reduce and broadcast count the buffer; reduce-scatter its
// input (p pieces); all-gather its output (p pieces).
double bus_factor(const std::string& op, int p) {
  if (op == "allreduce") return 2.0 * (p - 1) / p;
  if (op == "reducescatter" || op == "allgather") return double(p - 1) / p;
  return 1.0;
}

int rank_main(int rank, int nranks, Shared* sh, const Opts& o, const Args& a) {
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  emulate_node_of_rank(rank);
  g_shared = sh;
  DH_CUDA(cudaSetDevice(rank));
  nlohmann::json prov;
  if (rank == 0) {
    DH_NCCL(ncclGetUniqueId(&sh->id));
    prov = collect_provenance(0, a, "collective");
  }
  barrier(sh, nranks, o.timeout_s);
  ncclUniqueId id = sh->id;
  cudaStream_t stream;
  DH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = o.blocking ? 1 : 0;
  ncclComm_t comm = nullptr;
  {
    Watchdog wd(o.timeout_s);
    DH_NCCL(ncclCommInitRankConfig(&comm, nranks, id, rank, &cfg));
    wait_comm(comm, o.timeout_s, "ncclCommInitRankConfig");
  }

  void *send = nullptr, *recv = nullptr;
  DH_CUDA(cudaMalloc(&send, o.max_bytes));
  DH_CUDA(cudaMalloc(&recv, o.max_bytes));
  unsigned long long* bad = nullptr;
  DH_CUDA(cudaMalloc(&bad, sizeof *bad));

  std::vector<nlohmann::json> files;
  for (const auto& op : o.ops) {
    nlohmann::json rows = nlohmann::json::array();
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
      size_t total = bytes / sizeof(float);
      bool pieces = op == "reducescatter" || op == "allgather";
      if (total == 0 || (pieces && total % nranks)) {
        if (rank == 0) rows.push_back({{"bytes", bytes}, {"skipped", "count not divisible by the number of GPUs"}});
        continue;
      }
      size_t per = pieces ? total / nranks : total;
      auto launch = [&] {
        ncclResult_t r;
        if (op == "allreduce")
          r = ncclAllReduce(send, recv, total, ncclFloat, ncclSum, comm, stream);
        else if (op == "reducescatter")
          r = ncclReduceScatter(send, recv, per, ncclFloat, ncclSum, comm, stream);
        else if (op == "allgather")
          r = ncclAllGather(send, recv, per, ncclFloat, comm, stream);
        else
          r = ncclBroadcast(send, recv, total, ncclFloat, 0, comm, stream);
        check_nccl(r, op.c_str());
        if (r == ncclInProgress) wait_comm(comm, o.timeout_s, op.c_str());
      };
      // Check: known per-rank values in, the exact sums (small integers in fp32) out.
      sh->bad[rank] = 0;
      if (o.check) {
        size_t nsend = (op == "allgather") ? per : total;
        size_t nrecv = (op == "reducescatter") ? per : total;
        coll_fill(stream, static_cast<float*>(send), nsend, rank);
        fill_uniform(stream, recv, nrecv, DType::F32, 1000 + rank, -100.f, -50.f);  // poison
        DH_CUDA(cudaMemsetAsync(bad, 0, sizeof *bad, stream));
        DH_CUDA(cudaStreamSynchronize(stream));
        {
          Watchdog wd(o.timeout_s);  // the first call of an op sets up connections
          launch();
        }
        wait_stream(stream, comm, o.timeout_s, op.c_str());
        CollCheck k = op == "allreduce" ? CollCheck::AllReduce
                      : op == "reducescatter" ? CollCheck::ReduceScatter
                      : op == "allgather" ? CollCheck::AllGather
                                          : CollCheck::Broadcast;
        coll_check(stream, static_cast<const float*>(recv), nrecv, k, rank, nranks, per, 0, bad);
        unsigned long long hb = 0;
        DH_CUDA(cudaMemcpyAsync(&hb, bad, sizeof hb, cudaMemcpyDeviceToHost, stream));
        DH_CUDA(cudaStreamSynchronize(stream));
        sh->bad[rank] = hb;
      }
      {
        Watchdog wd(o.timeout_s);
        for (int i = 0; i < o.warmup; ++i) launch();
      }
      wait_stream(stream, comm, o.timeout_s, op.c_str());
      // Same iteration count on every rank: from a fixed estimate, not a measurement.
      double est = 30e-6 + double(bytes) * bus_factor(op, nranks) / 150e9;
      int iters = std::max(1, std::min(200, static_cast<int>(std::ceil(o.target_s / est))));
      int samples = std::min(o.samples, kMaxSamples);
      for (int sidx = 0; sidx < samples; ++sidx) {
        barrier(sh, nranks, o.timeout_s);
        double t0 = wall_s();
        {
          Watchdog wd(o.timeout_s);
          for (int i = 0; i < iters; ++i) launch();
        }
        wait_stream(stream, comm, o.timeout_s, op.c_str());
        sh->times[rank][sidx] = (wall_s() - t0) / iters;
      }
      barrier(sh, nranks, o.timeout_s);
      if (rank == 0) {
        std::vector<double> t(samples);
        unsigned long long mism = 0;
        for (int r = 0; r < nranks; ++r) mism += sh->bad[r];
        for (int sidx = 0; sidx < samples; ++sidx) {
          double m = 0;
          for (int r = 0; r < nranks; ++r) m = std::max(m, sh->times[r][sidx]);
          t[sidx] = m;
        }
        Stats s = stats_of(t);
        double algbw = bytes / s.median / 1e9;
        rows.push_back({{"op", op},
                        {"bytes", bytes},
                        {"count", total},
                        {"dtype", "float32"},
                        {"gpus", nranks},
                        {"time_s", std::stod(sig4(s.median))},
                        {"time_min_s", std::stod(sig4(s.min))},
                        {"time_spread_s", std::stod(sig4(s.spread()))},
                        {"samples", samples},
                        {"iters_per_sample", iters},
                        {"algbw_GBps", std::stod(sig4(algbw))},
                        {"busbw_GBps", std::stod(sig4(algbw * bus_factor(op, nranks)))},
                        {"check", !o.check ? "not_checked" : mism == 0 ? "ok" : "FAILED"},
                        {"mismatches", mism}});
        std::printf("%-13s %2d GPUs %11zu B  %10.2f us  algbw %8.2f GB/s  busbw %8.2f GB/s  %s\n", op.c_str(),
                    nranks, bytes, s.median * 1e6, algbw, algbw * bus_factor(op, nranks),
                    !o.check ? "" : mism == 0 ? "ok" : "CHECK FAILED");
        std::fflush(stdout);
      }
      barrier(sh, nranks, o.timeout_s);
    }
    if (rank == 0) {
      nlohmann::json f;
      f["op"] = op;
      f["gpus"] = nranks;
      f["dtype"] = "float32";
      f["reduction"] = op == "allreduce" || op == "reducescatter" ? "sum" : "none";
      f["bytes_convention"] = "nccl-tests: allreduce/broadcast the buffer, reducescatter the input, allgather the output";
      f["busbw_factor"] = bus_factor(op, nranks);
      f["timing"] = "per sample: host barrier, iters_per_sample back-to-back calls on one stream, wait; time = "
                    "elapsed / iters; the slowest rank per sample; time_s = median over samples";
      f["process_model"] = "one process per GPU (fork), ncclCommInitRankConfig";
      f["communicator"] = o.blocking ? "blocking" : "nonblocking";
      f["provenance"] = prov;
      f["rows"] = rows;
      write_json(o.out + "/" + op + "_" + std::to_string(nranks) + "gpu" + o.suffix + ".json", f);
    }
  }
  if (rank == 0) {
    prov["gpu"]["clocks_at_end"] = gpu_clocks_now(0);
    write_json(o.out + "/provenance.json", prov);
  }
  barrier(sh, nranks, o.timeout_s);
  {
    Watchdog wd(o.timeout_s);
    ncclCommFinalize(comm);
    wait_comm(comm, o.timeout_s, "ncclCommFinalize");
    ncclCommDestroy(comm);
  }
  cudaFree(send);
  cudaFree(recv);
  cudaFree(bad);
  return 0;
}

int probe_device_count() {
  int fds[2];
  if (pipe(fds) != 0) throw Error("pipe failed");
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    if (write(fds[1], &n, sizeof n) != sizeof n) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  int n = 0;
  if (read(fds[0], &n, sizeof n) != sizeof n) n = 0;
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return n;
}

size_t parse_bytes(const std::string& s) {
  if (s.empty()) throw Error("empty size");
  double mult = 1;
  std::string num = s;
  char last = static_cast<char>(std::toupper(s.back()));
  if (last == 'K' || last == 'M' || last == 'G') {
    mult = last == 'K' ? 1024.0 : last == 'M' ? 1048576.0 : 1073741824.0;
    num = s.substr(0, s.size() - 1);
  }
  return static_cast<size_t>(std::stod(num) * mult);
}

}  // namespace

int run_collective(const Args& a) {
  Opts o;
  o.out = a.str("out", "");
  if (o.out.empty()) throw Error("collective: --out DIR is required");
  o.ops = a.list("ops", "allreduce,reducescatter,allgather,broadcast");
  for (auto& op : o.ops)
    if (op != "allreduce" && op != "reducescatter" && op != "allgather" && op != "broadcast")
      throw Error("--ops: allreduce, reducescatter, allgather, broadcast; not '" + op + "'");
  o.min_bytes = parse_bytes(a.str("min-bytes", "4"));
  o.max_bytes = parse_bytes(a.str("max-bytes", "1G"));
  o.samples = static_cast<int>(a.integer("samples", 10));
  o.warmup = static_cast<int>(a.integer("warmup", 5));
  o.timeout_s = a.num("timeout-s", 60);
  o.target_s = a.num("target-ms", 5) * 1e-3;
  o.check = !a.has("no-check");
  std::string comm_mode = a.str("comm", "blocking");
  if (comm_mode != "blocking" && comm_mode != "nonblocking") throw Error("--comm: blocking or nonblocking");
  o.blocking = comm_mode == "blocking";
  o.suffix = a.str("file-suffix", "");
  double total_timeout = a.num("total-timeout-s", 1200);
  std::string gpus_arg = a.str("gpus", "");
  a.str("git-commit", "");  // read by collect_provenance in rank 0
  auto unused = a.unused();
  if (!unused.empty()) throw Error("collective: unknown option --" + unused[0]);
  if (o.min_bytes < 4 || o.max_bytes < o.min_bytes) throw Error("collective: bad --min-bytes/--max-bytes");

  setenv("NCCL_NVLS_ENABLE", "0", 1);
  int ndev = probe_device_count();
  std::vector<long long> gpu_counts;
  if (gpus_arg.empty()) {
    gpu_counts.push_back(ndev);
  } else {
    for (auto& s : split(gpus_arg, ',')) gpu_counts.push_back(std::stoll(s));
  }
  make_dirs(o.out);
  int status = 0;
  for (long long p : gpu_counts) {
    if (p < 2 || p > ndev || p > kMaxRanks) {
      std::fprintf(stderr, "collective: %lld GPUs requested, %d visible: skipped\n", p, ndev);
      status = 2;
      continue;
    }
    auto* sh = static_cast<Shared*>(
        mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    if (sh == MAP_FAILED) throw Error("mmap failed");
    std::memset(sh, 0, sizeof *sh);
    std::vector<pid_t> kids;
    for (int r = 0; r < p; ++r) {
      pid_t pid = fork();
      if (pid < 0) throw Error("fork failed");
      if (pid == 0) {
        int rc = 1;
        try {
          rc = rank_main(r, static_cast<int>(p), sh, o, a);
        } catch (const std::exception& e) {
          std::snprintf(sh->err[r], sizeof sh->err[r], "%s", e.what());
          __atomic_store_n(&sh->failed, 1, __ATOMIC_RELEASE);
          std::fprintf(stderr, "rank %d: %s\n", r, e.what());
          rc = 1;
        }
        std::fflush(stdout);
        _exit(rc);
      }
      kids.push_back(pid);
    }
    double t0 = wall_s();
    std::vector<bool> done(p, false);
    int left = static_cast<int>(p), failed = 0;
    while (left > 0) {
      for (int r = 0; r < p; ++r) {
        if (done[r]) continue;
        int st = 0;
        pid_t w = waitpid(kids[r], &st, WNOHANG);
        if (w == kids[r]) {
          done[r] = true;
          --left;
          if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            ++failed;
            __atomic_store_n(&sh->failed, 1, __ATOMIC_RELEASE);
          }
        }
      }
      if (left > 0 && wall_s() - t0 > total_timeout) {
        std::fprintf(stderr, "collective: %lld-GPU run exceeded %.0f s: killing its processes\n", p, total_timeout);
        for (int r = 0; r < p; ++r)
          if (!done[r]) kill(kids[r], SIGKILL);
        failed = static_cast<int>(p);
        for (int r = 0; r < p; ++r)
          if (!done[r]) waitpid(kids[r], nullptr, 0);
        break;
      }
      usleep(20000);
    }
    if (failed) {
      std::fprintf(stderr, "collective: %lld-GPU run failed\n", p);
      status = 1;
    }
    munmap(sh, sizeof *sh);
  }
  return status;
}

}  // namespace dh
