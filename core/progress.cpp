#include "core/progress.hpp"

#include <cstdio>
#include <unistd.h>

namespace dtsim {

namespace {
// Below this the bar would only flicker; redraws are spaced so that drawing costs nothing.
constexpr double kShowAfter_s = 0.3;
constexpr double kRedrawEvery_s = 0.1;
constexpr int kBarWidth = 30;
}  // namespace

Progress::Progress(std::string label, size_t total)
    : label_(std::move(label)), total_(total), enabled_(::isatty(STDERR_FILENO) == 1 && total > 1) {
  start_ = last_ = std::chrono::steady_clock::now();
}

Progress::~Progress() {
  if (drawn_) std::fprintf(stderr, "\r\033[K");
}

void Progress::tick(size_t n) {
  done_ += n;
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  double since_start = std::chrono::duration<double>(now - start_).count();
  double since_draw = std::chrono::duration<double>(now - last_).count();
  if (since_start < kShowAfter_s || (since_draw < kRedrawEvery_s && done_ < total_)) return;
  last_ = now;
  draw();
}

void Progress::draw() {
  double frac = total_ ? static_cast<double>(done_) / total_ : 1;
  int filled = static_cast<int>(frac * kBarWidth);
  std::string bar(filled, '#');
  bar += std::string(kBarWidth - filled, '.');
  std::fprintf(stderr, "\r%s [%s] %zu/%zu", label_.c_str(), bar.c_str(), done_, total_);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace dtsim
