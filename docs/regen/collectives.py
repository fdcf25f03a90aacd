"""docs/accuracy.md's table of dtsim collective against the held-out public nccl-tests logs
(validation/data/public_collectives), per source, as validation/scripts/public_collectives.py runs it."""
import json
import os
import statistics
import tempfile

from .engine import ROOT, block

DATA = os.path.join(ROOT, "validation", "data", "public_collectives")
SCRIPT_DIR = os.path.join(ROOT, "validation", "scripts")


def _script():
    import importlib.util
    spec = importlib.util.spec_from_file_location("public_collectives", os.path.join(SCRIPT_DIR, "public_collectives.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@block("accuracy-public-collectives")
def public_collectives(ctx):
    pc = _script()
    with open(os.path.join(DATA, "index.json")) as f:
        index = json.load(f)
    lines = ["| source | split | healthy | cluster as stated | NCCL_ALGO | rows >= 64 MiB | median abs error | max | dtsim runs |",
             "|---|---|---|---|---|---|---|---|---|"]
    healthy = []
    with tempfile.TemporaryDirectory() as tmp:
        for src in index["sources"]:
            rows = [r for r in pc.rows_of(os.path.join(DATA, src["file"])) if r["bytes"] >= pc.MIN_BYTES]
            if not rows:
                continue
            algo = pc.ALGO.get(src.get("env", {}).get("NCCL_ALGO", "").upper(), "auto")
            cmd = ["dtsim", "collective", "--cluster", pc.cluster_for(src, tmp), "--gpus", src["gpus"], "--op", src["op"], "--algo", algo,
                   "--nvls", "on" if src.get("nvls") else "off",
                   "--bytes", ",".join(str(int(r["bytes"])) for r in rows), "--format", "json"]
            pred = {int(p["bytes"]): p for p in json.loads(ctx.run(cmd))}
            errs = [pred[int(r["bytes"])]["time_s"] / (r["time_us"] * 1e-6) - 1 for r in rows]
            chosen = sorted({pred[int(r["bytes"])]["chosen_algo"] + "/" + str(pred[int(r["bytes"])]["protocol"]) for r in rows})
            if src["healthy"] and src["split"] == "held_out":
                healthy += errs
            cluster = (f"{src['nodes']} x {src['gpus_per_node']} {src['gpu']}, {src['nics_per_node']} x {src['nic_Gbps']} Gb/s NICs a node, "
                       f"{src['fabric'].split(';')[0]}")
            lines.append(f"| [{src['id']}]({src['url']}) | {src['split']} | {'yes' if src['healthy'] else 'no'} | {cluster} | "
                         f"{src.get('env', {}).get('NCCL_ALGO', 'default')} | {len(rows)} | "
                         f"{100 * statistics.median(abs(e) for e in errs):.1f}% | {100 * max(abs(e) for e in errs):.1f}% | {', '.join(chosen)} |")
    if healthy:
        lines.append("")
        lines.append(f"Healthy held-out rows at 64 MiB and more: {len(healthy)}, median |error| "
                     f"{100 * statistics.median(abs(e) for e in healthy):.1f}%, max {100 * max(abs(e) for e in healthy):.1f}%.")
    return "\n".join(lines) + "\n"
