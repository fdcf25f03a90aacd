#!/usr/bin/env bash
# The other schemes on GPUs: the harness's train mode with other ways of sharing what the workers learn,
# on one node of 4 GPUs, in one call (builds nothing: carry validation/build-harness, whose binary is
# validation/build-harness/validation/dtsim-harness, as run_node.sh does). Each scheme is one
# harness process over every model x batch x precision (the cuDNN autotuning is shared inside it):
#   dp        plain DDP-like bucketed ncclAllReduce on 4 GPUs (the reference, same call)
#   hier2     --allreduce hierarchical --group-size 2: per bucket reduce-scatter in each pair,
#             all-reduce of the halves between the pairs, all-gather in the pair (dtsim's
#             `hierarchical` on a cluster of 2 "nodes" of 2 GPUs)
#   leader2   --allreduce hierarchical-leader --group-size 2: reduce to the pair's first GPU,
#             all-reduce between the two leaders, broadcast in the pair
#   avg1/4/16 --average-every K: local SGD, no gradient all-reduce, the parameters all-reduced
#             (averaged) every K steps (K = 1: every step, dp's bytes but of parameters)
# Results: OUT/strategies/*.json (dtsim-measured-run/1; the non-dp ones carry a "strategy" object),
# OUT/*.log, OUT/gpus.txt, OUT/topo.txt; after every phase all of it again as TAR.
# usage: validation/scripts/run_strategies.sh OUT [TAR]
# env: MODELS (resnet50,alexnet,vgg16), BATCHES (32,64), MATHS (fp32,bf16), ITERS (32), WARMUP (4),
#      PHASE_S (55 s per scheme), SCHEMES (dp hier2 avg1 avg4 avg16 leader2)
# Compare with dtsim afterwards (on the dtsim machine):
#   build/dtsim validate --measured OUT/strategies            (each run with its scheme's strategy)
#   python3 validation/scripts/compare_strategies.py TAR --dtsim build/dtsim   (tables per model, vs dp)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
out="${1:?usage: run_strategies.sh OUT [TAR]}"
tar_out="${2:-}"
here="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$here"
H="validation/scripts/run_harness.sh"
[[ -x validation/build-harness/validation/dtsim-harness ]] || {
  echo "run_strategies.sh: validation/build-harness/validation/dtsim-harness missing (carry validation/build-harness)" >&2
  exit 2
}
mkdir -p "$out/strategies"
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
nvidia-smi -L > "$out/gpus.txt" 2>&1
nvidia-smi topo -m > "$out/topo.txt" 2>&1
echo "run_strategies.sh on $ngpu GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)"
(( ngpu >= 4 )) || { echo "run_strategies.sh: needs 4 GPUs" >&2; exit 2; }
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0,1,2,3}"

ITERS="${ITERS:-32}"
WARMUP="${WARMUP:-4}"
ARGS="--gpus 4 --model ${MODELS:-resnet50,alexnet,vgg16} --batch ${BATCHES:-32,64} --math ${MATHS:-fp32,bf16}
      --iters $ITERS --warmup $WARMUP --profile-iters 1 --models-dir configs/models --timeout-s 45"
pack() { [[ -n "$tar_out" ]] && tar czf "$tar_out.tmp" -C "$out" . && mv "$tar_out.tmp" "$tar_out"; }
declare -A OPTS=(
  [dp]=""
  [hier2]="--allreduce hierarchical --group-size 2"
  [leader2]="--allreduce hierarchical-leader --group-size 2"
  [avg1]="--average-every 1"
  [avg4]="--average-every 4"
  [avg16]="--average-every 16"
)
t_all=$SECONDS
for s in ${SCHEMES:-dp hier2 avg1 avg4 avg16 leader2}; do
  [[ -v "OPTS[$s]" ]] || { echo "unknown scheme $s" >&2; continue; }
  t0=$SECONDS
  echo "[$(date -u +%H:%M:%S)] $s: dtsim-harness train ${OPTS[$s]} ..."
  # shellcheck disable=SC2086
  timeout "${PHASE_S:-55}" $H train --out "$out/strategies" $ARGS ${OPTS[$s]} > "$out/$s.log" 2>&1
  rc=$?
  echo "[$(date -u +%H:%M:%S)] $s: exit $rc after $((SECONDS - t0)) s, $(grep -c median "$out/$s.log") configurations"
  grep -hE "median|skipped|error|Error|rank" "$out/$s.log" | cut -c1-170
  pack
done
echo "run_strategies.sh: done in $((SECONDS - t_all)) s; $(ls "$out/strategies" | grep -c json) JSON files"
pack
exit 0
