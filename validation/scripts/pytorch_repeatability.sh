#!/usr/bin/env bash
# How repeatable a host-bound PyTorch DDP timing is: the same configuration (default resnet50 b16
# fp32, 1 GPU) in fresh processes, three times each: as measured so far; with the process pinned to 4
# cores and OMP_NUM_THREADS=1; with torch.cuda.synchronize() after every step.
# usage: [CONFIG=resnet50:16] [PREC=fp32] validation/scripts/pytorch_repeatability.sh OUT
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
out="${1:?usage: pytorch_repeatability.sh OUT}"
cd "$(dirname "$0")/../.."
{ nproc; lscpu | grep -E "Model name|NUMA node|Thread|Socket"; cat /proc/loadavg; } > "$out.host.txt" 2>&1 || true
mkdir -p "$out"
cat "$out.host.txt" 2>/dev/null; mv "$out.host.txt" "$out/host.txt" 2>/dev/null
P="python3 validation/pytorch/ddp_reference.py --gpus 1 --configs ${CONFIG:-resnet50:16} --precisions ${PREC:-fp32} --iters 40 --warmup 5"
for i in 1 2 3; do $P --out "$out/plain$i" --port $((29530 + i)) 2>&1 | grep median; done
for i in 1 2 3; do OMP_NUM_THREADS=1 taskset -c 2-5 $P --out "$out/pinned$i" --port $((29540 + i)) 2>&1 | grep median; done
for i in 1 2; do $P --out "$out/sync$i" --port $((29550 + i)) --sync-every-step 2>&1 | grep median; done
python3 - "$out" <<'PY'
import json, glob, sys
for f in sorted(glob.glob(sys.argv[1] + "/*/*.json")):
    it = json.load(open(f))["iteration_time_s"]
    print(f.split("/")[-2], "median", it["median"], "p10", it.get("p10"), "p90", it.get("p90"), "min", it["min"], "max", it["max"])
PY
