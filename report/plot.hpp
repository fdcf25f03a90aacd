#pragma once
// Plots drawn by gnuplot. A plot is a gnuplot script plus the data files it reads; both go to a
// fresh temporary folder, gnuplot runs there, and the picture is rendered under a temporary name
// beside the destination. Nothing lands at the destination until commit(), so that a command that
// fails later (another plot, its text output) leaves no half-made files behind.
#include <string>
#include <vector>

namespace dtsim {

// gnuplot's path: $DTSIM_GNUPLOT if set (tests point it at a missing file to check the error), else
// the first `gnuplot` on $PATH. Throws InputError(flag, "gnuplot is not installed ...") when absent.
std::string find_gnuplot(const std::string& flag);

// "png" or "svg" from the file name; InputError(flag) for anything else.
std::string plot_format(const std::string& flag, const std::string& path);

// Quotes text for a gnuplot single-quoted string (titles, labels).
std::string gp_quote(const std::string& text);

struct PlotFile {
  std::string name;     // relative to the script's folder, e.g. "s0.dat"
  std::string content;  // whitespace-separated columns; strings in double quotes
};

class Plot {
 public:
  // `flag` names the option in errors; `path` is where the picture goes (.png or .svg).
  Plot(std::string flag, std::string path, int width_px, int height_px);
  ~Plot();  // removes an uncommitted rendering
  Plot(const Plot&) = delete;
  Plot& operator=(const Plot&) = delete;
  Plot(Plot&&) noexcept;

  // Runs gnuplot on `body` (everything after the terminal and output settings, which Plot writes)
  // with `files` beside it. Throws std::runtime_error with gnuplot's first error line if it fails.
  void render(const std::string& body, const std::vector<PlotFile>& files);
  // Renames the rendering into place.
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string flag_, path_, tmp_path_, format_;
  int width_, height_;
  bool rendered_ = false;
};

}  // namespace dtsim
