#pragma once
// Running the real dtsim binary from the study tests: exit code, stdout, stderr.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace study_test {

struct Run {
  int code;
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `env` is prepended to the command line ("DTSIM_GNUPLOT=/nonexistent").
inline Run run_dtsim(const std::string& args, const std::string& env = "") {
  static int n = 0;
  std::string base = (std::filesystem::temp_directory_path() / ("dtsim_study_" + std::to_string(::getpid()) + "_" + std::to_string(n++))).string();
  std::string cmd = env + (env.empty() ? "" : " ") + std::string(DTSIM_BINARY) + " " + args + " >" + base + ".out 2>" + base + ".err </dev/null";
  int status = std::system(cmd.c_str());
  Run r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(base + ".out"), slurp(base + ".err")};
  std::filesystem::remove(base + ".out");
  std::filesystem::remove(base + ".err");
  return r;
}

inline int lines(const std::string& s) {
  int k = 0;
  for (char c : s) k += c == '\n';
  return k;
}

// A fresh folder under the temporary directory, removed at the end of the test.
struct TempDir {
  std::string path;
  explicit TempDir(const std::string& tag) {
    path = (std::filesystem::temp_directory_path() / ("dtsim_" + tag + "_" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name, const std::string& content) const {
    std::string p = path + "/" + name;
    std::ofstream(p) << content;
    return p;
  }
};

}  // namespace study_test
