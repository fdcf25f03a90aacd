#include "report/plot.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/args.hpp"
#include "core/error.hpp"

namespace dtsim {

namespace fs = std::filesystem;

static bool executable(const std::string& p) {
  std::error_code ec;
  return ::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p, ec);
}

std::string find_gnuplot(const std::string& flag) {
  const char* forced = std::getenv("DTSIM_GNUPLOT");
  if (forced && *forced) {
    if (executable(forced)) return forced;
    throw InputError(flag, std::string("gnuplot is not installed (DTSIM_GNUPLOT=") + forced + " is not an executable); install gnuplot-nox (scripts/setup.sh does)");
  }
  const char* path = std::getenv("PATH");
  for (const std::string& dir : split(path ? path : "/usr/bin:/bin", ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/gnuplot";
    if (executable(candidate)) return candidate;
  }
  throw InputError(flag, "gnuplot is not installed (not found on PATH); install gnuplot-nox (scripts/setup.sh does)");
}

std::string plot_format(const std::string& flag, const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  if (ext == ".png") return "png";
  if (ext == ".svg") return "svg";
  throw InputError(flag, "'" + path + "' must end in .png or .svg");
}

std::string gp_quote(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

Plot::Plot(std::string flag, std::string path, int width_px, int height_px)
    : flag_(std::move(flag)), path_(std::move(path)), width_(width_px), height_(height_px) {
  format_ = plot_format(flag_, path_);
  fs::path dest = fs::absolute(path_);
  std::error_code ec;  // e.g. a name too long: reported as a missing folder, not a filesystem_error
  if (!fs::is_directory(dest.parent_path(), ec)) throw InputError(flag_, "folder of '" + path_ + "' does not exist");
  // Same folder as the destination, so that the final rename is atomic; a leading dot hides it.
  tmp_path_ = (dest.parent_path() / ("." + dest.filename().string() + ".tmp." + std::to_string(::getpid()) + "." + format_)).string();
}

Plot::Plot(Plot&& o) noexcept
    : flag_(std::move(o.flag_)), path_(std::move(o.path_)), tmp_path_(std::move(o.tmp_path_)), format_(std::move(o.format_)),
      width_(o.width_), height_(o.height_), rendered_(o.rendered_) {
  o.rendered_ = false;
  o.tmp_path_.clear();
}

Plot::~Plot() {
  if (rendered_ && !tmp_path_.empty()) std::remove(tmp_path_.c_str());
}

static std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Plot::render(const std::string& body, const std::vector<PlotFile>& files) {
  const std::string gnuplot = find_gnuplot(flag_);
  std::string tmpl = (fs::temp_directory_path() / "dtsim_plot_XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw std::runtime_error("cannot create a temporary folder for gnuplot");
  const std::string dir = buf.data();
  struct Cleanup {
    std::string d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir};

  for (const auto& f : files) {
    std::ofstream out(dir + "/" + f.name, std::ios::binary);
    out << f.content;
    if (!out) throw std::runtime_error("cannot write gnuplot data " + dir + "/" + f.name);
  }
  std::string terminal = format_ == "png" ? "pngcairo" : "svg";
  std::ostringstream script;
  script << "set terminal " << terminal << " size " << width_ << "," << height_ << " noenhanced font 'Sans,10'"
         << (format_ == "svg" ? " background rgb 'white'" : "") << "\n"
         << "set output " << gp_quote(tmp_path_) << "\n"
         << body << "\nunset output\n";
  {
    std::ofstream out(dir + "/plot.gp", std::ios::binary);
    out << script.str();
    if (!out) throw std::runtime_error("cannot write gnuplot script");
  }

  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("cannot start gnuplot");
  if (pid == 0) {
    // The child: run in the data folder, stderr to a file for the error message.
    if (::chdir(dir.c_str()) != 0) ::_exit(127);
    int err = ::open("gnuplot.err", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int null = ::open("/dev/null", O_RDWR);
    if (err >= 0) ::dup2(err, 2);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
    }
    ::execl(gnuplot.c_str(), "gnuplot", "plot.gp", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error("lost track of gnuplot");
  rendered_ = true;  // whatever it left at tmp_path_ is ours to remove
  std::string err = slurp(dir + "/gnuplot.err");
  std::error_code ec;
  const auto bytes = fs::file_size(tmp_path_, ec);  // no such file: ec, not a filesystem_error
  bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !ec && bytes > 0;
  if (!ok) {
    std::string first;
    std::istringstream lines(err);
    for (std::string l; std::getline(lines, l);)
      if (l.find_first_not_of(" \t^") != std::string::npos) first += (first.empty() ? "" : " ") + l;
    if (first.size() > 300) first = first.substr(0, 300) + "...";
    throw std::runtime_error("gnuplot failed drawing " + path_ + (first.empty() ? "" : ": " + first));
  }
}

void Plot::commit() {
  if (!rendered_) throw std::runtime_error("plot " + path_ + " committed before it was rendered");
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) throw InputError(flag_, "cannot rename the plot into place at '" + path_ + "'");
  rendered_ = false;
}

}  // namespace dtsim
