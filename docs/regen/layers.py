"""The drawing of the library's layers (docs/design.md §8, README.md's layout) from
cmake/dtsim_layers.cmake, the file the build enforces: a new layer there redraws the picture, and
the check fails until docs/design.md §8 has a sentence for it."""
import os
import re

from .engine import ROOT, Failure, block, read

CMAKE = "cmake/dtsim_layers.cmake"
OUTSIDE = ("tools",)  # built from the layers but outside the runtime's link


def rules():
    """({folder: [folders it may include]}, [the library's layers in the file's order])."""
    with open(os.path.join(ROOT, CMAKE), encoding="utf-8") as f:
        text = f.read()
    sets = dict(re.findall(r"^set\((DTSIM_LAYER\w*) ?([^)]*)\)", text, re.M))
    expand = lambda v: [w for x in v.replace('"', "").split() for w in (expand(sets[x[2:-1]]) if x.startswith("${") else [x])]
    folders = expand(sets["DTSIM_LAYER_FOLDERS"])
    return {f: expand(sets.get(f"DTSIM_LAYER_{f}", "")) for f in folders}, expand(sets["DTSIM_LAYERS"])


def levels(deps):
    memo = {}

    def level(f):
        if f not in memo:
            memo[f] = 0 if not deps[f] else 1 + max(level(d) for d in deps[f])
        return memo[f]

    return {f: level(f) for f in deps}


def stack(deps):
    """The runtime's folders by level, top first."""
    lv = levels(deps)
    runtime = [f for f in deps if f not in OUTSIDE]
    return [[f for f in runtime if lv[f] == n] for n in range(max(lv[f] for f in runtime), -1, -1)]


def rule_line(left, right, above, below, width):
    """A horizontal line of the drawing: a joint where a cell boundary of the row above or below meets it."""
    chars = []
    for p in range(1, width - 1):
        up, down = p in above, p in below
        chars.append("┼" if up and down else "┴" if up else "┬" if down else "─")
    return left + "".join(chars) + right


@block("layers-drawing")
def layers_drawing(ctx):
    deps, _ = rules()
    rows, width = stack(deps), 65
    bounds = lambda row: {k * ((width - 1) // len(row)) for k in range(1, len(row))}
    lines, above = [], set()
    for i, row in enumerate(rows):
        lines.append(rule_line("┌" if i == 0 else "├", "┐" if i == 0 else "┤", above, bounds(row), width))
        cell = (width - 1) // len(row)
        text = "".join(("│" if k else "") + f" {f}/".ljust(cell - 1) for k, f in enumerate(row))
        lines.append("│" + text.ljust(width - 2) + "│")
        above = bounds(row)
    lines.append(rule_line("└", "┘", above, set(), width))
    lv = levels(deps)
    may = []
    for f in [f for row in rows for f in row] + [f for f in deps if f in OUTSIDE]:
        allowed = " ".join(f"{d}/" for d in sorted(deps[f], key=lambda d: -lv[d])) or "nothing but itself"
        may.append(f"{f + '/':11s} may include  {allowed}")
    return "```text\n" + "\n".join(lines) + "\n\n" + "\n".join(may) + "\n```"


@block("layers-chain")
def layers_chain(ctx):
    deps, _ = rules()
    rows = stack(deps)
    chain = " -> ".join(row[0] if len(row) == 1 else "{" + ", ".join(row) + "}" for row in rows)
    text = read("docs/design.md")
    sec = text[text.index("## §8 Layers"):]
    sec = sec[:sec.index("\n## ", 4)] if "\n## " in sec[4:] else sec
    missing = [f for f in deps if f"- **{f}/**" not in sec]
    if missing:
        raise Failure(f"layers-chain: docs/design.md §8 has no sentence for {', '.join(f + '/' for f in missing)}; add a "
                      "'- **folder/**' bullet on what it holds and what may touch it")
    return (f"The library folders are layers, each a CMake library that links only those below it: {chain}. "
            "docs/design.md §8 draws them and says what each holds and may touch; the build enforces the direction.")
