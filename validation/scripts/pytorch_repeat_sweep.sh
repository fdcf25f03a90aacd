#!/usr/bin/env bash
# Fresh-process repeats of 1-GPU PyTorch DDP configurations on one machine, with a host probe in each
# process (ddp_reference.py --host-probe): how far one configuration's iteration time moves between
# processes, and whether the host's speed per op moves with it. Rounds go over all configurations in
# turn (every other round in reverse order), so a configuration's repeats are spread over the call.
# usage: validation/scripts/pytorch_repeat_sweep.sh OUT FIRST_ROUND LAST_ROUND DEADLINE_S "model:batch:prec ..."
# No process starts after DEADLINE_S seconds; OUT/round<r>/ holds the runs, OUT/host.txt the machine.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
out="${1:?usage: OUT FIRST_ROUND LAST_ROUND DEADLINE_S CONFIGS}"; first="$2"; last="$3"; deadline="$4"
read -r -a configs <<< "$5"
cd "$(dirname "$0")/../.."
mkdir -p "$out"
{ date -u +%FT%TZ; nproc; lscpu | grep -E "Model name|NUMA node|Thread|Socket|MHz"; cat /proc/loadavg
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv; } > "$out/host.txt" 2>&1
start=$SECONDS
for ((r = first; r <= last; r++)); do
  order=("${configs[@]}")
  if (( r % 2 == 0 )); then order=(); for ((i = ${#configs[@]} - 1; i >= 0; i--)); do order+=("${configs[i]}"); done; fi
  for c in "${order[@]}"; do
    if (( SECONDS - start > deadline )); then echo "deadline: stopped before round $r $c"; break 2; fi
    IFS=: read -r model batch prec <<< "$c"
    python3 validation/pytorch/ddp_reference.py --gpus 1 --configs "$model:$batch" --precisions "$prec" \
      --iters 20 --warmup 3 --host-probe --out "$out/round$r" --port $((29600 + r)) 2>&1 | grep -E "median|skipped|Error"
  done
done
echo "elapsed $((SECONDS - start)) s"
