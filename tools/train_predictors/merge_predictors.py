#!/usr/bin/env python3
"""Merges predictor folders written by separate `dtsim-train-predictors` runs into one shipped folder.

Convolutions and the other kinds are trained with different settings (kernels_mlp/README.md), so each
is its own trainer run; dtsim reads one folder per GPU. Later folders replace predictors of the same
key. Each predictor keeps the `trained_with` of the run that wrote it, and the data files of all runs
are listed (with their hashes) so that tests/test_pretrained.cpp can re-check every predictor; a
predictor merged from a trainer run since 2026-11-28 also names its run's files (trained_with.files).

  tools/train_predictors/merge_predictors.py --out kernels_mlp/pretrained/h100-sxm /tmp/base /tmp/conv

A folder given as FOLDER:GLOB contributes only the predictors whose key matches GLOB (fnmatch), e.g.
the NHWC predictors of a run that trained them jointly with NCHW ones that are not to replace the
shipped ones: `kernels_mlp/pretrained/h100-sxm /tmp/nhwc:conv2d/*/nhwc`. Its data files are all listed
(the predictors taken were trained on all of them).

The merged manifest stores each predictor's feature vectors as base64 of float32 values, each
predictor's block checksum (`weights_fnv1a64`, as compute/impl/mlp/mlp.cpp `weights_checksum`) and
weights.bin's size (`weights_bytes`), as the trainer writes them. `--pack FOLDER` rewrites one
folder's manifest so, its numbers otherwise untouched (a folder written before those fields).
"""
import argparse, base64, fnmatch, json, os, re, struct, sys, tempfile


# Numbers are carried as the trainer (nlohmann::json) wrote them: Python would print some doubles with
# another, equally exact, last digit (22.425735473632812 for 22.425735473632813), and a merge must leave
# the predictors it does not replace byte-identical.
_RAW = "\u0000raw:"


def load_manifest(path):
    with open(path) as f:
        return json.load(f, parse_float=lambda text: _RAW + text)


def dump_manifest(m):
    text = json.dumps(m, indent=1, sort_keys=True) + "\n"
    return re.sub(r'"\\u0000raw:([^"]*)"', r"\1", text)


VECTORS = ("feature_mean", "feature_std", "feature_min", "feature_max")


def raw_float(x):
    """A number of a manifest loaded by load_manifest, as Python reads it."""
    return float(x[len(_RAW):]) if isinstance(x, str) and x.startswith(_RAW) else float(x)


def block_floats(p):
    """How many floats a predictor's block of weights.bin holds (an ensemble stores its diagonal blocks only)."""
    blocks = p.get("weight_blocks", [1] * (len(p["layers"]) - 1))
    return sum(i * o // k + o for i, o, k in zip(p["layers"][:-1], p["layers"][1:], blocks))


def checksum(block):
    """FNV-1a (64 bit) over little-endian 32-bit words: compute/impl/mlp/mlp.cpp weights_checksum."""
    h = 0xcbf29ce484222325
    for (word,) in struct.iter_unpack("<I", block):
        h = ((h ^ word) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def pack(p, weights):
    """A predictor's vectors as base64 float32 (a vector already so stays) and its block's checksum."""
    for field in VECTORS:
        if field in p and isinstance(p[field], list):
            p[field] = base64.b64encode(struct.pack(f"<{len(p[field])}f", *map(raw_float, p[field]))).decode()
    start = p["weights_offset"] * 4
    p["weights_fnv1a64"] = checksum(weights[start:start + 4 * block_floats(p)])


def write_folder(out, manifest, weights):
    manifest["weights_bytes"] = len(weights)
    os.makedirs(out, exist_ok=True)
    for name, data in (("weights.bin", weights), ("manifest.json", dump_manifest(manifest).encode())):
        fd, tmp = tempfile.mkstemp(dir=out)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, os.path.join(out, name))


def pack_folder(folder):
    m = load_manifest(os.path.join(folder, "manifest.json"))
    with open(os.path.join(folder, "weights.bin"), "rb") as f:
        w = f.read()
    for p in m["predictors"]:
        pack(p, w)
    write_folder(folder, m, w)
    print(f"{len(m['predictors'])} predictors packed in {folder}")


def kinds_of(manifest):
    """Kernel kinds a trainer folder's predictors cover (conv2d, gemm, ...)."""
    return {p["key"].split("/")[0] for p in manifest["predictors"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--pack", help="rewrite this folder's manifest with packed vectors, checksums and weights_bytes; nothing else")
    ap.add_argument("folders", nargs="*", help="trainer output folders (manifest.json + weights.bin), in order; FOLDER:GLOB takes "
                    "only the predictors whose key matches GLOB")
    a = ap.parse_args()
    if a.pack:
        return pack_folder(a.pack)
    if not a.out or not a.folders:
        ap.error("--out and at least one folder (or --pack FOLDER)")

    merged, blob, by_key = None, b"", {}
    for arg in a.folders:
        folder, _, pattern = arg.partition(":")
        m = load_manifest(os.path.join(folder, "manifest.json"))
        with open(os.path.join(folder, "weights.bin"), "rb") as f:
            w = f.read()
        if len(w) % 4:
            sys.exit(f"{folder}/weights.bin: not whole float32 values")
        if merged is None:
            merged = {k: v for k, v in m.items() if k not in ("predictors", "trained_with", "data")}
            merged["data"] = []
        for field in ("gpu", "data_dir", "format"):
            if m.get(field) != merged.get(field):
                sys.exit(f"{folder}/manifest.json: {field} {m.get(field)!r} differs from {merged.get(field)!r}")
        # The baseline is shared by every predictor of the folder: a later folder may add a field the
        # earlier ones lack (l2_cache_bytes, written since the GPU presets give it), never change one.
        for field, value in m.get("baseline", {}).items():
            if field in merged["baseline"] and merged["baseline"][field] != value:
                sys.exit(f"{folder}/manifest.json: baseline.{field} {value!r} differs from {merged['baseline'][field]!r}")
            merged["baseline"][field] = value
        offset = len(blob) // 4
        blob += w
        for p in m["predictors"]:
            if pattern and not fnmatch.fnmatchcase(p["key"], pattern):
                continue
            p = dict(p)
            p["weights_offset"] += offset
            if "trained_with" not in p:
                # A trainer run's predictor: its run's settings, and the files that run read, which
                # tests/test_pretrained.cpp scores it on (the merged list also holds other runs' files,
                # e.g. the legacy-API convolutions an NHWC run trained beside, keyed like these).
                p["trained_with"] = dict(m["trained_with"], files=[d["file"] for d in m["data"]])
            p["_folder"] = folder
            by_key[p["key"]] = p
        for d in m["data"]:
            # A data file re-measured since an earlier folder was trained: the later folder's hash
            # stands, and every predictor trained on the older version must be replaced here too.
            older = [e for e in merged["data"] if e["file"] == d["file"] and e != d]
            merged["data"] = [e for e in merged["data"] if e not in older]
            if older:
                stale = [k for k, q in by_key.items() if q.get("_folder") != folder and q["key"].split("/")[0] in kinds_of(m)]
                if stale:
                    sys.exit(f"{folder}: {d['file']} changed since {', '.join(stale)} were trained, and {folder} does not replace them")
            if d not in merged["data"]:
                merged["data"].append(d)
    for p in by_key.values():
        p.pop("_folder")
    merged["predictors"] = [by_key[k] for k in sorted(by_key)]
    merged["trained_with"] = "per predictor (tools/train_predictors/merge_predictors.py)"
    # Keep only the weights still referenced, in key order, so the shipped file has no dead bytes.
    out = b""
    for p in merged["predictors"]:
        start = p["weights_offset"] * 4
        p["weights_offset"] = len(out) // 4
        out += blob[start:start + 4 * block_floats(p)]
        pack(p, out)
    write_folder(a.out, merged, out)
    print(f"{len(merged['predictors'])} predictors, {len(out) // 4} weights -> {a.out}")


if __name__ == "__main__":
    main()
