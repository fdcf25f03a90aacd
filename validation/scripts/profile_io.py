"""Reads and writes framework profiles (configs/frameworks/NAME.json) for the scripts that fill them:
fit_framework.py (host costs), framework_kernel_factors.py (kernel_time_factors), host_cost_profile.py
(host_cost_s). A profile is replaced whole or not at all (a temporary file renamed over it)."""
import json, os, tempfile


def write_profile(path, prof):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(prof, f, indent=2)
        f.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def set_profile_field(path, field, value, source_note):
    """Sets one field of an existing profile and its note under sources, keeping everything else."""
    with open(path) as f:
        prof = json.load(f)
    prof[field] = value
    prof.setdefault("sources", {})[field] = source_note
    write_profile(path, prof)
