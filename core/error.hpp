#pragma once
// Errors that reach the user. Bad input is the user's to fix, so it names where (a file and JSON
// path, or a command-line flag) and which rule was broken; the CLI turns it into exit code 2.
#include <stdexcept>
#include <string>

namespace dtsim {

class InputError : public std::runtime_error {
 public:
  InputError(const std::string& where, const std::string& rule);
  const std::string& where() const { return where_; }
  const std::string& rule() const { return rule_; }

 private:
  std::string where_;
  std::string rule_;
};

}  // namespace dtsim
