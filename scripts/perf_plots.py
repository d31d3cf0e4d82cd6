"""Draws the performance pages of the documentation from benchmarks/records.json.

    python scripts/perf_plots.py OUT_DIR      # one page and one PNG per benchmark and card
    python scripts/perf_plots.py --check      # only check the records against BENCHMARKS.md

Per card (H100, H200): a Markdown page `<card>.md` with, for each benchmark
recorded on it, a grouped bar chart of each contender's speed relative to
ours (ours next to cuBLAS, cuDNN, Triton, ... as recorded) and the table, each with its date, commit and the
BENCHMARKS.md section it comes from. Before drawing, every record is
checked against BENCHMARKS.md: its section must exist and hold every
number of the record, so a record cannot silently differ from the log.
`make docs` runs it (docs/conf.py); matplotlib is pinned in
requirements/test.txt.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = os.path.join(ROOT, "benchmarks", "records.json")
BENCHMARKS = os.path.join(ROOT, "BENCHMARKS.md")


def load_records(path: str = RECORDS) -> Dict[str, List[dict]]:
    with open(path) as f:
        return json.load(f)["cards"]


def sections(path: str = BENCHMARKS) -> Dict[str, str]:
    """BENCHMARKS.md's '## ' sections: heading -> text."""
    out: Dict[str, str] = {}
    heading = None
    for line in open(path, encoding="utf-8"):
        if line.startswith("## "):
            heading = line[3:].strip()
            out[heading] = ""
        elif heading is not None:
            out[heading] += line
    return out


def _number(v) -> str:
    return str(v)


def check(cards: Dict[str, List[dict]], path: str = BENCHMARKS) -> List[str]:
    """The records' disagreements with BENCHMARKS.md (empty when none)."""
    text = sections(path)
    problems = []
    for card, records in cards.items():
        for r in records:
            where = f"{card} {r['benchmark']}"
            body = text.get(r["section"])
            if body is None:
                problems.append(f"{where}: no section {r['section']!r} in BENCHMARKS.md")
                continue
            if card not in body and card not in r["section"]:
                problems.append(f"{where}: section {r['section']!r} does not name the {card}")
            for case in r["cases"]:
                if len(case) != len(r["contenders"]) + 1:
                    problems.append(f"{where} {case[0]}: {len(case) - 1} values for "
                                    f"{len(r['contenders'])} contenders")
                for v in case[1:]:
                    if v is not None and not re.search(
                            r"(?<![\d.])" + re.escape(_number(v)) + r"(?![\d])", body):
                        problems.append(f"{where} {case[0]}: {v} is not in its section")
    return problems


def _slug(card: str, benchmark: str) -> str:
    return f"{card.lower()}_{benchmark.replace('-', '_')}"


def plot(record: dict, card: str, png: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = record["cases"]
    names = record["contenders"]
    n = len(names)
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(min(11.0, max(6.0, 0.28 * len(cases) * n + 2)), 3.8),
                           dpi=100)
    for i, name in enumerate(names):
        xs = [c + (i - (n - 1) / 2) * width for c in range(len(cases))]
        ax.bar(xs, [_relative(record, case, i) for case in cases], width, label=name,
               color=_COLORS[i % len(_COLORS)])
    ax.axhline(1.0, color="black", linewidth=0.6)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([c[0] for c in cases], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(f"speed relative to ours\n(from {record['unit']})", fontsize=8)
    ax.set_title(f"{record['title']}\n{card}, {record['date']}, commit {record['commit']}",
                 fontsize=9)
    top = max(_relative(record, case, i) for case in cases for i in range(n))
    ax.set_ylim(0, max(1.0, top) * 1.25)
    ax.legend(fontsize=7, ncol=min(n, 5), loc="upper center")
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)


# ours first, in red; the contenders in matplotlib's other default colors.
_COLORS = ["#d62728", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b"]


def _relative(record: dict, case: list, i: int) -> float:
    """Contender i's speed relative to ours' on `case` (0 where not measured)."""
    ours, v = case[1], case[i + 1]
    if not ours or not v:
        return 0.0
    return v / ours if record["higher_is_better"] else ours / v


def _ratio(record: dict, case: list) -> str:
    ours = case[1]
    others = [v for v in case[2:] if v is not None]
    if not ours or not others:
        return "—"
    best = max(others) if record["higher_is_better"] else min(others)
    r = ours / best if record["higher_is_better"] else best / ours
    return f"{r:.2f}x"


def card_page(card: str, records: List[dict], out_dir: str) -> str:
    lines = [f"# {card}\n\n"]
    if not records:
        lines.append(
            f"No benchmark has been recorded on the {card} yet. Each benchmark's command "
            "pair (`scripts/gpu_check.sh prepare-NAME` on a machine with the compiler, "
            "`run-NAME` on the GPU machine; the README of `benchmarks/` and BENCHMARKS.md "
            f"say how) records a table in BENCHMARKS.md naming the card; its numbers go "
            f"into `benchmarks/records.json` under `{card}`, and this page draws them.\n")
        return "".join(lines)
    lines.append(f"The latest full table of each benchmark on the {card}, from "
                 "`benchmarks/records.json` (transcribed from BENCHMARKS.md and checked "
                 "against it when the site is built). Every contender was checked against "
                 "a float32 reference on the same random inputs before it was timed. The "
                 "last column is ours against the best other contender (above 1: ours is "
                 "faster).\n\n")
    for r in records:
        png = _slug(card, r["benchmark"]) + ".png"
        plot(r, card, os.path.join(out_dir, png))
        run = f", {r['run']}" if r.get("run") else ""
        lines.append(f"## {r['title']}\n\n"
                     f"{r['date']}, commit `{r['commit']}`, `{r['script']}`; BENCHMARKS.md, "
                     f"\"{r['section']}\"{run}.\n\n"
                     f"![{r['title']}]({png})\n\n")
        lines.append("| case | " + " | ".join(r["contenders"]) + " | ours / best other |\n")
        lines.append("|---" * (len(r["contenders"]) + 2) + "|\n")
        for case in r["cases"]:
            vals = ["—" if v is None else str(v) for v in case[1:]]
            lines.append(f"| {case[0]} | " + " | ".join(vals) + f" | {_ratio(r, case)} |\n")
        lines.append(f"\n({r['unit']}, {'higher' if r['higher_is_better'] else 'lower'} "
                     "is better.)\n\n")
    return "".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?")
    ap.add_argument("--check", action="store_true", help="only check the records")
    args = ap.parse_args()
    cards = load_records()
    problems = check(cards)
    if problems:
        sys.exit("benchmarks/records.json disagrees with BENCHMARKS.md:\n  "
                 + "\n  ".join(problems))
    if args.check:
        print(f"{sum(map(len, cards.values()))} records agree with BENCHMARKS.md")
        return
    if not args.out_dir:
        ap.error("OUT_DIR is required without --check")
    os.makedirs(args.out_dir, exist_ok=True)
    for card in ("H100", "H200"):
        with open(os.path.join(args.out_dir, f"{card.lower()}.md"), "w") as f:
            f.write(card_page(card, cards.get(card, []), args.out_dir))


if __name__ == "__main__":
    main()
