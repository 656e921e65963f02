#!/usr/bin/python3
"""The figures, tables and chart of bench/sweep_bench.py, from the runs it recorded; no cluster,
no clock. Its test: bench/sweep_bench_test.py.

A run is one sweep, as sweep_bench.py records it (runs.json):
    {"searcher": "asha", "repeat": 1, "seed": 1, "max_trials": 40, "wall_s": 61.2,
     "state": "COMPLETED", "timed_out": false,
     "trials": [{"id": 1, "state": "STOPPED_EARLY", "gpus": 1,
                 "intervals": [[start, end], ...],   # wall seconds (Unix) it held its GPUs
                 "points": [[time, step, value], ...]},  # the metric's points, by time
                ...]}

GPU time at a moment t is what every trial of the run held until t: the sum over their
intervals of the part before t, times their GPUs. A searcher's progress is its best value so far
at each metric point, against the GPU time at that point's moment.

Usage: sweep_bench_report.py RUNS_JSON OUT_DIR  (writes sweeps.md, sweeps.svg and summary.json
again from recorded runs, e.g. after changing how they are drawn).
"""

import html
import json
import math
import os
import statistics
import sys

COLOURS = {"grid": "#1f77b4", "random": "#d95f02", "asha": "#1b9e77"}
OTHER_COLOUR = "#7570b3"


def gpu_seconds_until(run, t):
    """GPU time every trial of the run had held by the moment t."""
    total = 0.0
    for trial in run["trials"]:
        for start, end in trial["intervals"]:
            if t > start:
                total += (min(end, t) - start) * trial["gpus"]
    return total


def total_gpu_seconds(run):
    return sum((end - start) * trial["gpus"]
               for trial in run["trials"] for start, end in trial["intervals"])


def progress(run):
    """[(gpu_seconds, wall_time, best_so_far)] at each metric point of any trial, in time order:
    larger values are better (the bench's metric, val_acc, is maximised)."""
    points = sorted((p[0], p[2]) for trial in run["trials"] for p in trial["points"])
    out, best = [], None
    for time, value in points:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if best is None or value > best:
            best = value
        out.append((gpu_seconds_until(run, time), time, best))
    return out


def first_start(run):
    starts = [start for trial in run["trials"] for start, _ in trial["intervals"]]
    return min(starts) if starts else None


def to_target(run, target):
    """(GPU seconds, wall seconds from the first trial's start) until a trial's point first
    reached target; None if none did."""
    for gpu_s, time, best in progress(run):
        if best >= target:
            return gpu_s, time - first_start(run)
    return None


def best_within(run, budget):
    """The best value of the points reported while the run had used at most budget GPU
    seconds; None if none was."""
    best = None
    for gpu_s, _, value in progress(run):
        if gpu_s <= budget:
            best = value
    return best


def start_seconds(run):
    """The median, over the trials that reported, of the time from taking their GPUs to their
    first point: what starting a trial costs (with its first epoch)."""
    starts = [t["points"][0][0] - t["intervals"][0][0] for t in run["trials"]
              if t["points"] and t["intervals"]]
    return statistics.median(starts) if starts else None


def summarise(run, target, budget):
    """One run's figures."""
    reached = to_target(run, target)
    curve = progress(run)
    states = [t["state"] for t in run["trials"]]
    return {"searcher": run["searcher"], "repeat": run["repeat"], "seed": run["seed"],
            "max_trials": run["max_trials"], "trials": len(run["trials"]),
            "stopped_early": states.count("STOPPED_EARLY"),
            "best": curve[-1][2] if curve else None,
            "best_within_budget": best_within(run, budget),
            "gpu_s_to_target": reached[0] if reached else None,
            "wall_s_to_target": reached[1] if reached else None,
            "gpu_s": total_gpu_seconds(run), "wall_s": run["wall_s"],
            "first_point_s": start_seconds(run), "load": run.get("load"),
            "timed_out": run.get("timed_out", False)}


def median_of(values):
    """The median of the values, None (not reached, no value) counting as worse than any: so a
    searcher that reached the target in one run of three has no median time to it."""
    if not values:
        return None
    known = sorted(v for v in values if v is not None)
    missing = len(values) - len(known)
    ordered = known + [math.inf] * missing
    m = statistics.median(ordered)
    return None if math.isinf(m) else m


def low_median_of(values):
    """As median_of, for figures where larger is better and None is worse than any (a best
    value): None sorts first."""
    if not values:
        return None
    known = sorted(v for v in values if v is not None)
    ordered = [-math.inf] * (len(values) - len(known)) + known
    m = statistics.median(ordered)
    return None if math.isinf(m) else m


def ordered_searchers(summaries):
    seen = []
    for s in summaries:
        if s["searcher"] not in seen:
            seen.append(s["searcher"])
    return seen


def aggregate(summaries):
    """Per searcher, in order of first appearance: medians over its runs, and the range of the
    best value."""
    rows = []
    for name in ordered_searchers(summaries):
        runs = [s for s in summaries if s["searcher"] == name]
        bests = [s["best"] for s in runs if s["best"] is not None]
        rows.append({
            "searcher": name, "runs": len(runs),
            "max_trials": median_of([s["max_trials"] for s in runs]),
            "trials": median_of([s["trials"] for s in runs]),
            "stopped_early": median_of([s["stopped_early"] for s in runs]),
            "best": low_median_of([s["best"] for s in runs]),
            "best_min": min(bests) if bests else None,
            "best_max": max(bests) if bests else None,
            "best_within_budget": low_median_of([s["best_within_budget"] for s in runs]),
            "gpu_s_to_target": median_of([s["gpu_s_to_target"] for s in runs]),
            "wall_s_to_target": median_of([s["wall_s_to_target"] for s in runs]),
            "reached": sum(s["gpu_s_to_target"] is not None for s in runs),
            "gpu_s": median_of([s["gpu_s"] for s in runs]),
            "wall_s": median_of([s["wall_s"] for s in runs]),
            "first_point_s": median_of([s["first_point_s"] for s in runs]),
            "timed_out": sum(s["timed_out"] for s in runs)})
    return rows


def fmt(value, digits=0, none="—"):
    if value is None:
        return none
    return f"{value:.{digits}f}"


def markdown(rows, meta):
    """The table of medians, with what was measured above it."""
    target, budget = meta["target"], meta["budget_gpu_s"]
    lines = [
        f"{meta['description']}",
        "",
        f"Medians over each searcher's runs; best: median (min–max); to {target}: GPU seconds "
        f"(and wall seconds) until a trial first reported {meta['metric']} ≥ {target}, with "
        f"how many runs reached it; within budget: the best reported while the run had used at "
        f"most {fmt(budget)} GPU-s; start s: seconds from a trial's placement to its first "
        f"point (its start-up and first epoch), median over the trials.",
        "",
        f"| Searcher | Runs | Trials (max) | Stopped early | Best {meta['metric']} | "
        f"Best within {fmt(budget)} GPU-s | GPU-s to {target} (wall s) | Reached | GPU-s | "
        f"Wall s | Start s |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        best = fmt(r["best"], 4)
        if r["runs"] > 1 and r["best_min"] is not None and r["best_min"] != r["best_max"]:
            best += f" ({r['best_min']:.4f}–{r['best_max']:.4f})"
        to = fmt(r["gpu_s_to_target"])
        if r["wall_s_to_target"] is not None:
            to += f" ({r['wall_s_to_target']:.0f})"
        lines.append(
            f"| {r['searcher']} | {r['runs']} | {fmt(r['trials'])} ({fmt(r['max_trials'])}) | "
            f"{fmt(r['stopped_early'])} | {best} | {fmt(r['best_within_budget'], 4)} | {to} | "
            f"{r['reached']}/{r['runs']} | {fmt(r['gpu_s'])} | {fmt(r['wall_s'])} | "
            f"{fmt(r['first_point_s'], 1)} |")
    timed_out = sum(r["timed_out"] for r in rows)
    if timed_out:
        lines += ["", f"{timed_out} run(s) ran past the time limit and were killed: their "
                      "figures are of what they did until then."]
    return "\n".join(lines) + "\n"


def step_value(curve, g):
    """The best so far at GPU time g of a progress curve; None before its first point."""
    best = None
    for gpu_s, _, value in curve:
        if gpu_s > g:
            break
        best = value
    return best


def median_curve(curves, xs):
    """At each x, the median over the runs of their best so far (a run with no point yet
    counts as worse than any); None where the median is such a run."""
    return [low_median_of([step_value(c, x) for c in curves]) for x in xs]


def svg(runs, meta, width=760, height=440):
    """Best so far against GPU time: each searcher's median over its runs as a thick line, each
    run as a thin one, the target dashed, the budget dotted. Plain SVG, no library."""
    left, right, top, bottom = 64, 150, 34, 48
    pw, ph = width - left - right, height - top - bottom
    target, budget = meta["target"], meta["budget_gpu_s"]
    by_searcher = {}
    for run in runs:
        by_searcher.setdefault(run["searcher"], []).append(progress(run))
    all_points = [p for curves in by_searcher.values() for c in curves for p in c]
    x_max = max([budget] + [p[0] for p in all_points]) * 1.02 or 1.0
    # From a little below the target to 1: the race near the target is what tells searchers
    # apart; the climb from chance is clipped.
    y_lo = max(0.0, math.floor((target - 0.15) * 20) / 20)
    y_hi = 1.0

    def x_of(g):
        return left + pw * g / x_max

    def y_of(v):
        return top + ph * (1 - (v - y_lo) / (y_hi - y_lo))

    def path(points):
        """A step line: the best so far holds until the next improvement."""
        d, last = [], None
        for g, v in points:
            if v is None:
                continue
            if last is None:
                d.append(f"M{x_of(g):.1f},{y_of(v):.1f}")
            else:
                d.append(f"H{x_of(g):.1f}V{y_of(v):.1f}")
            last = v
        return "".join(d)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">{html.escape(meta["title"])}</text>']
    # Axes, ticks and grid lines.
    out.append('<g stroke="#ccc">')
    x_step = nice_step(x_max, 8)
    x_ticks = [i * x_step for i in range(int(x_max / x_step) + 1)]
    for g in x_ticks:
        out.append(f'<line x1="{x_of(g):.1f}" y1="{top}" x2="{x_of(g):.1f}" y2="{top + ph}"/>')
    y_step = 0.05 if y_hi - y_lo > 0.25 else 0.01 if y_hi - y_lo <= 0.06 else 0.02
    y_ticks = [y_lo + i * y_step for i in range(int(round((y_hi - y_lo) / y_step)) + 1)]
    for v in y_ticks:
        out.append(f'<line x1="{left}" y1="{y_of(v):.1f}" x2="{left + pw}" y2="{y_of(v):.1f}"/>')
    out.append("</g>")
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" '
               f'stroke="#333"/>')
    for g in x_ticks:
        out.append(f'<text x="{x_of(g):.1f}" y="{top + ph + 16}" text-anchor="middle">'
                   f'{g:g}</text>')
    for v in y_ticks:
        out.append(f'<text x="{left - 6}" y="{y_of(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 10}" text-anchor="middle">'
               f'GPU seconds used by the sweep</text>')
    out.append(f'<text transform="translate(16,{top + ph / 2}) rotate(-90)" '
               f'text-anchor="middle">best {html.escape(meta["metric"])} so far</text>')
    # Target and budget.
    out.append(f'<line x1="{left}" y1="{y_of(target):.1f}" x2="{left + pw}" '
               f'y2="{y_of(target):.1f}" stroke="#555" stroke-dasharray="6,4"/>')
    out.append(f'<text x="{left + pw - 4}" y="{y_of(target) - 4:.1f}" text-anchor="end" '
               f'fill="#555">target {target:g}</text>')
    out.append(f'<line x1="{x_of(budget):.1f}" y1="{top}" x2="{x_of(budget):.1f}" '
               f'y2="{top + ph}" stroke="#555" stroke-dasharray="2,3"/>')
    out.append(f'<text x="{x_of(budget) - 4:.1f}" y="{top + ph - 6}" text-anchor="end" '
               f'fill="#555">budget {budget:g} GPU-s</text>')
    # Curves: thin per run, thick median, clipped to the plot.
    out.append(f'<clipPath id="plot"><rect x="{left}" y="{top}" width="{pw}" height="{ph}"/>'
               f'</clipPath><g clip-path="url(#plot)" fill="none">')
    xs = [x_max * i / 400 for i in range(401)]
    for name, curves in by_searcher.items():
        colour = COLOURS.get(name, OTHER_COLOUR)
        for c in curves:
            out.append(f'<path d="{path([(g, v) for g, _, v in c])}" stroke="{colour}" '
                       f'stroke-width="1" stroke-opacity="0.35"/>')
        med = median_curve(curves, xs)
        out.append(f'<path d="{path(list(zip(xs, med)))}" stroke="{colour}" '
                   f'stroke-width="2.5"/>')
    out.append("</g>")
    # Legend.
    lx, ly = left + pw + 14, top + 10
    for i, (name, curves) in enumerate(by_searcher.items()):
        colour = COLOURS.get(name, OTHER_COLOUR)
        y = ly + i * 20
        out.append(f'<line x1="{lx}" y1="{y}" x2="{lx + 22}" y2="{y}" stroke="{colour}" '
                   f'stroke-width="2.5"/>')
        runs_text = f"{len(curves)} run{'s' if len(curves) != 1 else ''}"
        out.append(f'<text x="{lx + 28}" y="{y + 4}">{html.escape(name)} ({runs_text})</text>')
    note_y = ly + len(by_searcher) * 20 + 10
    for j, line in enumerate(["thick: median of", "the runs; thin:", "each run"]):
        out.append(f'<text x="{lx}" y="{note_y + j * 15}" fill="#555">{line}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def nice_step(span, most):
    """A round tick step (1, 2 or 5 times a power of ten) giving at most `most` intervals."""
    raw = span / most
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 5, 10):
        if m * power >= raw:
            return m * power
    return 10 * power


def write_report(runs, meta, out_dir):
    """summary.json (every run's figures and the medians), sweeps.md and sweeps.svg in out_dir;
    returns the markdown."""
    summaries = [summarise(r, meta["target"], meta["budget_gpu_s"]) for r in runs]
    rows = aggregate(summaries)
    text = markdown(rows, meta)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "runs": summaries, "medians": rows}, f, indent=2)
        f.write("\n")
    with open(os.path.join(out_dir, "sweeps.md"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(out_dir, "sweeps.svg"), "w", encoding="utf-8") as f:
        f.write(svg(runs, meta))
    return text


def main(argv):
    if len(argv) != 3:
        print(__doc__.split("Usage: ")[1].strip(), file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    print(write_report(doc["runs"], doc["meta"], argv[2]), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
