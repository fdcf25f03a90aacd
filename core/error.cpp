#include "core/error.hpp"

namespace dtsim {

InputError::InputError(const std::string& where, const std::string& rule)
    : std::runtime_error(where.empty() ? rule : where + ": " + rule), where_(where), rule_(rule) {}

}  // namespace dtsim
