#pragma once
// A core header that reaches up into sim/: the layering check must refuse it.
#include "core/error.hpp"
#include "sim/predict.hpp"
