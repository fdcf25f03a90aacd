#!/usr/bin/env python3
"""Which tensors are live at the steady-state memory peak of one ddp_reference.py configuration.

Runs ddp_reference.run_config for one configuration (1 GPU, fresh process) with the CUDA caching
allocator's history recorded (Python stacks), replays the alloc/free trace, finds the largest
allocated total after the warm-up (where ddp_reference resets its peak counter) and prints the live
blocks at that moment grouped by where they were allocated. Written to find the extra FP32
parameter copy some runs carry (docs/accuracy.md, "Peak memory").
usage: python3 validation/pytorch/memory_snapshot.py MODEL:BATCH:PREC [--iters N] [--warmup N]
"""
import argparse, collections, os, sys, types
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29541")
import torch, torch.distributed as dist
import ddp_reference as R

ap = argparse.ArgumentParser()
ap.add_argument("config")
ap.add_argument("--iters", type=int, default=20)
ap.add_argument("--warmup", type=int, default=3)
args = ap.parse_args()
name, batch, prec = args.config.split(":")
torch.backends.cudnn.benchmark = True
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))

markers = []  # trace length at each reset of the peak counter (the last one ends the warm-up)
_reset = torch.cuda.reset_peak_memory_stats
def reset_marking(*a, **k):
    markers.append(len(torch.cuda.memory._snapshot()["device_traces"][0]))
    return _reset(*a, **k)
torch.cuda.reset_peak_memory_stats = reset_marking
ends = []  # trace length at each read of the peak counter (the one after the last reset ends the loop)
_read = torch.cuda.max_memory_allocated
def read_marking(*a, **k):
    ends.append(len(torch.cuda.memory._snapshot()["device_traces"][0]))
    return _read(*a, **k)
torch.cuda.max_memory_allocated = read_marking

torch.cuda.memory._record_memory_history(max_entries=2_000_000, stacks="all")
a = types.SimpleNamespace(iters=args.iters, warmup=args.warmup, nbatches=4, lr=0.01, sync_every_step=False, settle_s=0.0)
res = R.run_config(0, 1, name, int(batch), prec, a)
snap = torch.cuda.memory._snapshot()
torch.cuda.memory._record_memory_history(enabled=None)
trace = snap["device_traces"][0]

def where(frames):
    py = [f for f in frames if f["filename"].endswith(".py")]
    keep = [f for f in py if "/torch/" not in f["filename"] or "optim" in f["filename"]
            or "parallel" in f["filename"]][:3]
    if keep:
        return " <- ".join(f"{os.path.basename(f['filename'])}:{f['line']}:{f['name']}" for f in keep)
    cpp = [f["name"][:70] for f in frames if any(t in f["name"] for t in ("c10d", "autograd", "Reducer"))][:2]
    return "C++: " + " <- ".join(cpp) if cpp else "?"

live, total, peak, at_peak = {}, 0, -1, None
start = markers[-1] if markers else 0
end = min([n for n in ends if n >= start] or [len(trace)])
for i, e in enumerate(trace[:end]):
    if e["action"] == "alloc":
        live[e["addr"]] = (e["size"], where(e.get("frames", [])))
        total += e["size"]
    elif e["action"] == "free_requested" and e["addr"] in live:
        total -= live.pop(e["addr"])[0]
    if i >= start and total > peak:
        peak, at_peak = total, dict(live)
print(f"{args.config}: measured peak_allocated {res['memory']['peak_allocated_bytes'] / 1e6:.1f} MB, "
      f"replayed peak {peak / 1e6:.1f} MB (blocks allocated before recording are not seen), "
      f"measured loop = trace events {start}..{end} of {len(trace)}")
groups = collections.defaultdict(lambda: [0, 0])
for size, w in at_peak.values():
    groups[w][0] += size
    groups[w][1] += 1
for w, (size, n) in sorted(groups.items(), key=lambda kv: -kv[1][0])[:25]:
    print(f"  {size / 1e6:9.1f} MB {n:5d} blocks  {w}")
