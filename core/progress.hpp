#pragma once
// A progress bar on stderr for long sweeps, drawn only when stderr is a terminal (scripts and tests
// that capture stderr see nothing) and only for work that takes long enough to want one.
#include <chrono>
#include <cstddef>
#include <string>

namespace dtsim {

class Progress {
 public:
  Progress(std::string label, size_t total);
  ~Progress();  // erases the bar
  void tick(size_t n = 1);

 private:
  void draw();
  std::string label_;
  size_t total_, done_ = 0;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace dtsim
