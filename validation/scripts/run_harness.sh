#!/usr/bin/env bash
# Runs dtsim-harness with the environment the measurements assume:
#  - NVLink multicast off (NCCL_NVLS_ENABLE=0 ...): it can take a shared host's GPUs out of service;
#  - cuDNN / NCCL / cuBLAS taken from PyTorch's bundled wheels (site-packages/nvidia/...) when
#    python3 has them, so that harness and PyTorch runs use the same library builds; set
#    DTSIM_USE_TORCH_LIBS=0 to use the libraries the binary was linked against (/usr/local/cuda).
# usage: validation/scripts/run_harness.sh [BINARY] MODE [options]   (BINARY defaults to the usual build folders)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin=""
if [[ -x "${1:-}" && ! -d "${1:-}" ]]; then bin="$1"; shift; fi
if [[ -z "$bin" ]]; then
  for b in "$here/validation/build-harness/validation/dtsim-harness" "$here/build/validation/dtsim-harness"; do
    [[ -x "$b" ]] && { bin="$b"; break; }
  done
fi
[[ -n "$bin" ]] || { echo "run_harness.sh: dtsim-harness not built" >&2; exit 2; }
if [[ "${DTSIM_USE_TORCH_LIBS:-1}" == 1 ]] && command -v python3 >/dev/null; then
  nv="$(python3 -c 'import nvidia, os; print(os.pathsep.join(nvidia.__path__))' 2>/dev/null)"
  if [[ -n "$nv" ]]; then
    dirs=""
    IFS=: read -ra roots <<<"$nv"
    for lib in libcudnn.so.9 libnccl.so.2 libcublas.so.13 libcublasLt.so.13 libcudart.so.13; do
      f="$(find "${roots[@]}" -name "$lib" 2>/dev/null | head -n1)"
      [[ -n "$f" ]] && dirs="$dirs:$(dirname "$f")"
    done
    dirs="$(echo "${dirs#:}" | tr ':' '\n' | awk '!seen[$0]++' | paste -sd: -)"
    [[ -n "$dirs" ]] && export LD_LIBRARY_PATH="$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
fi
if [[ -z "${DTSIM_GIT_COMMIT:-}" ]]; then
  DTSIM_GIT_COMMIT="$(git -C "$here" rev-parse --verify -q HEAD 2>/dev/null || echo unknown)"
  export DTSIM_GIT_COMMIT
fi
exec "$bin" "$@"
