"""The lower trace as a diff of every pass against the one before.

A traced compile (`pass_configs={"tl.trace_dir": d}` or TILELANG_MLIR_TRACE=d)
writes `00-tile.mlir` (the emitted tile IR) and then `NN-<pass>.mlir`, the IR
after each pass, numbered. This module shows what each pass changed:

    print(tl.tools.trace_report("trace/"))                      # unified diffs
    tl.tools.trace_report("trace/", html_path="trace.html")     # one HTML file

or from a shell: `python -m tilelang_mlir.tools.trace trace/ [--html trace.html]`.
Passes that changed nothing are listed, not shown.
"""

from __future__ import annotations

import argparse
import difflib
import html
import os
import re
import sys
from dataclasses import dataclass
from typing import List, Optional

_FILE_RE = re.compile(r"^(?P<step>\d+)-(?P<name>.+)\.mlir$")


@dataclass
class TraceStep:
    """One file of a lower trace: the IR after pass `name` (step 0: the
    emitted tile IR)."""

    step: int
    name: str
    path: str
    text: str

    @property
    def lines(self) -> List[str]:
        return self.text.splitlines()

    @property
    def label(self) -> str:
        return f"{self.step:02d} {self.name}"


@dataclass
class PassDiff:
    """What step `after` changed relative to step `before`."""

    before: TraceStep
    after: TraceStep
    diff: List[str]  # unified diff lines, headers included; empty if unchanged
    added: int
    removed: int

    @property
    def changed(self) -> bool:
        return bool(self.diff)


def read_trace(trace_dir: str) -> List[TraceStep]:
    """The steps of the lower trace in `trace_dir`, in order."""
    if not os.path.isdir(trace_dir):
        raise FileNotFoundError(f"no lower trace folder {trace_dir!r}: compile with "
                                "pass_configs={'tl.trace_dir': ...} (or TILELANG_MLIR_TRACE) "
                                "first")
    steps = []
    for name in os.listdir(trace_dir):
        m = _FILE_RE.match(name)
        if not m:
            continue
        path = os.path.join(trace_dir, name)
        with open(path) as f:
            steps.append(TraceStep(int(m.group("step")), m.group("name"), path, f.read()))
    if not steps:
        raise FileNotFoundError(f"{trace_dir!r} holds no lower trace (no NN-<pass>.mlir "
                                "files): compile with pass_configs={'tl.trace_dir': ...}")
    steps.sort(key=lambda s: s.step)
    numbers = [s.step for s in steps]
    if len(set(numbers)) != len(numbers):
        dup = sorted({n for n in numbers if numbers.count(n) > 1})
        raise ValueError(f"{trace_dir!r} holds two files for step(s) {dup}: it mixes "
                         "traces; give each compile its own folder")
    return steps


def diff_steps(steps: List[TraceStep], context: int = 3) -> List[PassDiff]:
    """The diff of every step against the one before it."""
    result = []
    for before, after in zip(steps, steps[1:]):
        diff = list(difflib.unified_diff(before.lines, after.lines,
                                         os.path.basename(before.path),
                                         os.path.basename(after.path), n=context,
                                         lineterm=""))
        body = [d for d in diff[2:] if not d.startswith("@@")]
        added = sum(1 for d in body if d.startswith("+"))
        removed = sum(1 for d in body if d.startswith("-"))
        result.append(PassDiff(before, after, diff, added, removed))
    return result


def _clip(line: str, limit: int) -> str:
    if limit and len(line) > limit:
        return line[:limit] + f" ... ({len(line) - limit} more characters)"
    return line


def _headline(d: PassDiff) -> str:
    return (f"{d.after.label}: {len(d.before.lines)} -> {len(d.after.lines)} lines "
            f"(+{d.added} -{d.removed})")


def format_report(trace_dir: str, steps: List[TraceStep], diffs: List[PassDiff], *,
                  max_lines: Optional[int] = None, line_limit: int = 400,
                  color: bool = False) -> str:
    """The terminal report: a summary, then the unified diff of every pass
    that changed the IR (at most `max_lines` diff lines each), then the
    passes that changed nothing."""
    paint = (lambda code, s: f"\x1b[{code}m{s}\x1b[0m") if color else (lambda code, s: s)
    changed = [d for d in diffs if d.changed]
    unchanged = [d for d in diffs if not d.changed]
    out = [f"lower trace {trace_dir}: {len(steps)} steps, {len(changed)} passes changed the "
           f"IR, {len(unchanged)} did not",
           f"{steps[0].label}: {len(steps[0].lines)} lines (the input)"]
    for d in changed:
        out.append("")
        out.append(paint("1", f"=== {_headline(d)}"))
        shown = d.diff if max_lines is None else d.diff[:max_lines + 2]
        for i, line in enumerate(shown):
            line = _clip(line, line_limit)
            if i < 2:  # the file names
                out.append(paint("1", line))
            elif line.startswith("@@"):
                out.append(paint("36", line))
            elif line.startswith("+"):
                out.append(paint("32", line))
            elif line.startswith("-"):
                out.append(paint("31", line))
            else:
                out.append(line)
        if len(shown) < len(d.diff):
            out.append(f"... ({len(d.diff) - len(shown)} more diff lines)")
    out.append("")
    out.append("unchanged: " + (", ".join(d.after.label for d in unchanged) or "none"))
    return "\n".join(out)


_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; }
table.summary { border-collapse: collapse; font-size: 0.9em; margin-bottom: 1.5em; }
table.summary td, table.summary th { padding: 2px 10px; border-bottom: 1px solid #ddd;
  text-align: left; }
table.summary td.num { text-align: right; font-family: monospace; }
tr.same td { color: #999; }
details { margin: 0.4em 0; border: 1px solid #ccc; border-radius: 4px; }
summary { cursor: pointer; padding: 4px 8px; background: #f4f4f4; font-family: monospace; }
summary .add { color: #1a7f37; } summary .del { color: #cf222e; }
pre { margin: 0; padding: 6px 8px; font-size: 12px; line-height: 1.35; overflow-x: auto; }
pre span { display: block; white-space: pre; }
pre .add { background: #e6ffec; } pre .del { background: #ffebe9; }
pre .hunk { color: #0550ae; background: #ddf4ff; } pre .file { font-weight: bold; }
"""


def format_html(trace_dir: str, steps: List[TraceStep], diffs: List[PassDiff], *,
                line_limit: int = 4000) -> str:
    """One self-contained HTML page: a summary table of every step, then one
    collapsible section per pass that changed the IR (unified diff,
    additions green, removals red); the input IR comes first."""
    esc = html.escape
    rows = [f"<tr><td class=num>{steps[0].step:02d}</td><td>{esc(steps[0].name)}</td>"
            f"<td class=num>{len(steps[0].lines)}</td><td></td><td></td>"
            f"<td><a href='#step{steps[0].step}'>input</a></td></tr>"]
    for d in diffs:
        if d.changed:
            what = f"<a href='#step{d.after.step}'>changed</a>"
        else:
            what = "unchanged"
        rows.append(f"<tr class='{'' if d.changed else 'same'}'><td class=num>"
                    f"{d.after.step:02d}</td><td>{esc(d.after.name)}</td>"
                    f"<td class=num>{len(d.after.lines)}</td><td class=num>+{d.added}</td>"
                    f"<td class=num>-{d.removed}</td><td>{what}</td></tr>")
    sections = [f"<details id='step{steps[0].step}'><summary>{esc(steps[0].label)}: "
                f"{len(steps[0].lines)} lines (the input)</summary><pre>"
                + "".join(f"<span>{esc(_clip(line, line_limit))}</span>"
                          for line in steps[0].lines) + "</pre></details>"]
    for d in diffs:
        if not d.changed:
            continue
        body = []
        for i, line in enumerate(d.diff):
            cls = ("file" if i < 2 else
                   "hunk" if line.startswith("@@") else
                   "add" if line.startswith("+") else
                   "del" if line.startswith("-") else "")
            text = esc(_clip(line, line_limit)) or " "
            body.append(f"<span class='{cls}'>{text}</span>" if cls else f"<span>{text}</span>")
        sections.append(
            f"<details id='step{d.after.step}'><summary>{esc(d.after.label)}: "
            f"{len(d.before.lines)} &rarr; {len(d.after.lines)} lines "
            f"(<span class=add>+{d.added}</span> <span class=del>-{d.removed}</span>)"
            f"</summary><pre>{''.join(body)}</pre></details>")
    unchanged = ", ".join(esc(d.after.label) for d in diffs if not d.changed) or "none"
    n_changed = sum(1 for d in diffs if d.changed)
    return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
            f"<title>lower trace {esc(trace_dir)}</title><style>{_CSS}</style></head><body>"
            f"<h1>Lower trace <code>{esc(trace_dir)}</code></h1>"
            f"<p>{len(steps)} steps: {n_changed} passes changed the IR, "
            f"{len(diffs) - n_changed} did not (unchanged: {unchanged}).</p>"
            f"<table class=summary><tr><th>step</th><th>pass</th><th>lines</th>"
            f"<th>added</th><th>removed</th><th></th></tr>{''.join(rows)}</table>"
            f"{''.join(sections)}</body></html>\n")


def trace_report(trace_dir: str, html_path: Optional[str] = None, *, context: int = 3,
                 max_lines: Optional[int] = None, color: bool = False) -> str:
    """The lower trace in `trace_dir` as diffs of each pass against the
    previous step. Returns the terminal report (print it): a summary line,
    then for every pass that changed the IR its name, line counts and
    unified diff (`context` lines around changes, at most `max_lines` diff
    lines a pass), then the passes that changed nothing. With `html_path`
    also writes the same as one self-contained HTML page (one collapsible
    section per pass)."""
    steps = read_trace(trace_dir)
    diffs = diff_steps(steps, context)
    if html_path:
        with open(html_path, "w") as f:
            f.write(format_html(trace_dir, steps, diffs))
    return format_report(trace_dir, steps, diffs, max_lines=max_lines, color=color)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tilelang_mlir.tools.trace",
        description="Shows a lower trace (pass config tl.trace_dir) as the diff of every "
                    "pass against the previous step.")
    parser.add_argument("trace_dir", help="the folder of NN-<pass>.mlir files")
    parser.add_argument("--html", metavar="PATH", help="also write a self-contained HTML page")
    parser.add_argument("--context", type=int, default=3, help="context lines (default 3)")
    parser.add_argument("--max-lines", type=int, default=None,
                        help="show at most this many diff lines per pass")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    args = parser.parse_args(argv)
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    try:
        text = trace_report(args.trace_dir, args.html, context=args.context,
                            max_lines=args.max_lines, color=color)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    try:
        print(text)
        if args.html:
            print(f"wrote {args.html}")
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
