// The harness's modes; each returns the process exit status.
#pragma once

#include "util.hpp"

namespace dh {

int run_kernels(const Args& a);     // kernels.cu
int run_collective(const Args& a);  // collective.cpp
int run_train(const Args& a);       // train.cu
int run_info(const Args& a);        // main.cpp: provenance of device 0 as JSON on stdout
int run_selftest(const Args& a);    // selftest.cu: train-mode kernels against a CPU reference

}  // namespace dh
