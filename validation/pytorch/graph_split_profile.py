#!/usr/bin/env python3
"""What torch.compile's cut of a DDP graph costs: torch.profiler kernel lists
(mode_profile.py's format) of compiled DDP steps with DDPOptimizer's cut at DDP's buckets (`split`,
PyTorch's default), without it (`nosplit`: torch._dynamo.config.optimize_ddp = False, one graph) and
with one bucket after the first (`onebucket`: bucket_cap_mb 10000), and DDPOptimizer's log of each
(its bucket assignment and the compiled pieces with what they hand each other).

  python3 validation/pytorch/graph_split_profile.py OUT \
      "resnet50:128:bf16:contiguous:sgd:compile:split resnet50:128:bf16:contiguous:sgd:compile:nosplit"

OUT/<variant>/ gets <model>_b<batch>_..._<execution>.txt and <model>_b<batch>_<execution>_ddp_log.txt.
"""
import functools, logging, os, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch._dynamo  # noqa: E402

import ddp_reference  # noqa: E402
import mode_profile  # noqa: E402


class Grab(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def main():
    out, configs = sys.argv[1], sys.argv[2].split()
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    torch.backends.cudnn.benchmark = True
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29573")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=dev)
    log = logging.getLogger("torch._dynamo.backends.distributed")
    grab = Grab()
    log.addHandler(grab)
    log.setLevel(logging.DEBUG)
    ddp = ddp_reference.DDP
    for c in configs:
        m, b, p, fmt, o, ex, variant = c.split(":")
        torch._dynamo.config.optimize_ddp = variant != "nosplit"
        ddp_reference.DDP = functools.partial(ddp, bucket_cap_mb=10000) if variant == "onebucket" else ddp
        d = os.path.join(out, variant)
        os.makedirs(d, exist_ok=True)
        grab.lines.clear()
        t0 = time.time()
        try:
            mode_profile.profile_config(dev, m, int(b), p, fmt, o, ex, 3, d)
        except Exception as e:  # one failing configuration must not cost the others
            print(f"{c}: failed: {type(e).__name__}: {e}", flush=True)
        with open(os.path.join(d, f"{m}_b{b}_{ex}_ddp_log.txt"), "w") as f:
            f.write("\n".join(grab.lines))
        print(c, "done", round(time.time() - t0, 1), "s", len(grab.lines), "log lines", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
