#!/usr/bin/env python3
"""A campaign of random tile programs on the GPU (gpu_programs.py).

For each program (program i depends only on --seed and i):

1. a compile worker (one of --jobs processes, each under a memory limit and
   a time limit per step) runs it on the CPU target against its NumPy
   reference, keeps the CPU outputs, and compiles it for each --configs
   entry (default: sm_90a with warp specialization and TMA, `ws`; sm_90a
   without, `nows`; sm_80, `sm80`) into a saved artifact;
2. a runner process (one, on the GPU) loads each artifact (`tl.load`: no
   compiler), runs it on fresh inputs with its outputs poisoned, and
   compares the result with the NumPy reference and the CPU target's
   result. Each run has a time limit: a kernel that does not finish is a
   HANG (the runner is killed and restarted, the next kernel goes on); a
   runner that dies, or a CUDA error (after which its context is unusable,
   so it is restarted too), is a CRASH.

Compiles and runs overlap (a program's kernels run as soon as they are
compiled). `--dry` only compiles (PTX and ptxas: no GPU needed).

Verdicts of a kernel (a program under one config): PASS, MISMATCH, HANG,
CRASH, COMPILE_ERROR (a valid program refused or failing in the compiler:
the generated programs are valid, so this is a finding), REFUSED (a
documented limit, see KNOWN_LIMITS: not a finding), SKIPPED (the config
cannot run the program: float8 on sm_80). The CPU target against NumPy is
the `cpu-vs-numpy` row. OUT gets summary.json (counts per config and family, every
failure signature), results.jsonl (one line per kernel, written as they
come), table.md, and failures/<VERDICT>_<family>_<hash>/ with prog.py
(standalone: `python prog.py --run ws` recompiles and reruns it) and
result.json.

    python test/fuzz/gpu_campaign.py --seed 1 --count 1000 --out /tmp/gpu-campaign
    python test/fuzz/gpu_campaign.py --seed 1 --count 200 --dry --jobs 2

Exit status: 0 when nothing failed, 1 on a finding, 2 when the smoke
program fails (a broken installation: nothing was fuzzed).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import queue
import random
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional

import gpu_programs as gp
import random_programs as rp

# Clear refusals that are limits of the compiler as documented, not bugs; a
# kernel refused so is REFUSED. (Keep this list short: every entry hides a
# class of programs from the campaign.)
KNOWN_LIMITS = [
    # docs/compat.md: math functions on float64 are not lowered for CUDA.
    r"this math function on 'f64' is not supported on CUDA targets",
    # float8 gemms run on wgmma alone (no mma.sync path for them): shapes
    # wgmma cannot take fall back to the SIMT gemm, which refuses big tiles.
    # (gpu_gemm gives float8 whole warpgroups; random_programs' gemm family
    # does not.)
    r"(?s)runs without tensor cores here.*more than \d+.*f8E[45]M",
    # gpu_programs sizes its shared buffers against SHARED_LIMIT, but cannot
    # count the compiler's scratch (an A fragment's staging, a reduction's
    # workspace) or swizzle alignment: a program a little over sm_80's
    # 163 KB is refused there with this clear message (seed 44, program 771).
    r"more than the \d+ KB a block can have on sm_80",
]

# The row of the CPU target against NumPy (one per program).
REF = "cpu-vs-numpy"
FINDINGS = ("MISMATCH", "HANG", "CRASH", "COMPILE_ERROR")
COLUMNS = ("PASS", "MISMATCH", "HANG", "CRASH", "COMPILE_ERROR", "REFUSED", "SKIPPED")


# ---------------------------------------------------------------------------
# Child processes: compile workers and the runner
# ---------------------------------------------------------------------------


def compile_child() -> int:
    """A compile worker: one JSON task a line (program file, configs,
    artifact folder, whether to run the CPU part); STAGE lines as it goes,
    then DONE."""
    import runpy
    for line in sys.stdin:
        task = json.loads(line)

        def stage(s):
            print("STAGE " + s, flush=True)
        try:
            mod = runpy.run_path(task["prog"], run_name="__fuzz__")
            mod["compile_all"](task["configs"], task["art"], stage, cpu=task["cpu"])
        except BaseException as e:  # the program file itself is broken
            import traceback
            print("STAGE harness-error " + json.dumps(
                {"verdict": "HARNESS", "signature": f"{type(e).__name__}: {str(e)[:100]}",
                 "detail": traceback.format_exc()[-3000:]}), flush=True)
        print("DONE", flush=True)
    return 0


def runner_child(device: str) -> int:
    """The runner: one JSON task a line (program file, artifact folder,
    config); READY once the device is up, then a RESULT line per task. A
    CUDA error ends the process after its RESULT (the context is lost)."""
    import runpy
    import traceback
    name = "cpu"
    if device == "cuda":
        import torch
        torch.zeros(1, device="cuda")
        name = torch.cuda.get_device_name()
    print("READY " + name, flush=True)
    mods: Dict[str, dict] = {}
    for line in sys.stdin:
        task = json.loads(line)
        fatal = False
        try:
            mod = mods.get(task["prog"])
            if mod is None:
                mods.clear()  # one program's kernels come together
                mod = mods[task["prog"]] = runpy.run_path(task["prog"], run_name="__fuzz__")
            res = mod["run_artifact"](task["art"], task["config"],
                                      lambda s: print("STAGE " + s, flush=True))
        except Exception as e:  # noqa: BLE001
            msg = f"{type(e).__name__}: {e}"
            cuda = bool(re.search(r"CUDA_ERROR|cudaError|CUDA error|illegal|misaligned", msg))
            fatal = cuda
            res = {"verdict": "CRASH", "signature": ("cuda: " if cuda else "launch: ")
                   + re.sub(r"\d+", "N", msg.splitlines()[0] if msg else "")[:160],
                   "detail": (msg[:2000] + "\n" + traceback.format_exc()[-2000:])}
        print("RESULT " + json.dumps(res), flush=True)
        if fatal:
            return 0
    return 0


class Child:
    """A child process speaking lines on stdin/stdout, in its own session
    (killed with its group), under an address-space limit (compile
    workers; not the CUDA runner, whose driver maps more than any limit)."""

    def __init__(self, argv: List[str], log: Path, mem_mb: int = 0):
        self.argv, self.log, self.mem_mb = argv, log, mem_mb
        self.proc: Optional[subprocess.Popen] = None
        self.buf = b""
        self.served = 0

    def start(self):
        env = dict(os.environ, TILELANG_MLIR_DISABLE_CACHE="1", PYTHONFAULTHANDLER="1")
        env.setdefault("OMP_NUM_THREADS", "1")
        mem = self.mem_mb

        def limits():
            if mem:
                resource.setrlimit(resource.RLIMIT_AS, (mem << 20, mem << 20))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        self.err = open(self.log, "wb")
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, preexec_fn=limits, env=env,
                                     start_new_session=True, bufsize=0)
        self.buf = b""
        self.served = 0

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.proc.wait()
            self.err.close()
        self.proc = None

    def send(self, obj):
        if not self.alive():
            self.start()
        self.served += 1
        self.err.truncate(0)
        self.err.seek(0)
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())
        self.proc.stdin.flush()

    def readline(self, timeout: float):
        """The next line; None at the timeout; "" when the child died."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.proc.stdout], [], [], min(left, 1.0))
            if r:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    return ""
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace")

    def death(self) -> tuple:
        """(exit status, stderr tail) of a child that died."""
        rc = self.proc.wait()
        self.err.flush()
        try:
            tail = self.log.read_bytes()[-4000:].decode(errors="replace")
        except OSError:
            tail = ""
        self.stop()
        return rc, tail


# ---------------------------------------------------------------------------
# The campaign
# ---------------------------------------------------------------------------


class Campaign:
    def __init__(self, args, make_program=None):
        """make_program(index) -> Program (default: gpu_programs.generate
        with args' seed and families; tests pass programs of their own)."""
        self.args = args
        self.make_program = make_program or (
            lambda i: gp.generate(args.seed, i, args.families))
        self.out: Path = args.out
        self.lock = threading.Lock()
        self.summary = {"seed": args.seed, "start": args.start, "count": args.count,
                        "configs": args.configs, "dry": args.dry, "jobs": args.jobs,
                        "programs": 0, "kernels": 0, "counts": {}, "by_family": {},
                        "signatures": {}, "refusals": {}, "skipped": {}, "timing": {},
                        "paths": {}}
        self.results = open(self.out / "results.jsonl", "a")
        self.run_queue: "queue.Queue" = queue.Queue()
        self.pending_programs: Dict[int, dict] = {}  # index -> {family, desc, path, left}
        self.compile_seconds: List[float] = []
        self.children: List["Child"] = []
        self.interrupted = False
        self.run_seconds: List[float] = []

    # -- recording -------------------------------------------------------------

    def record(self, index: int, config: str, verdict: str, rec: dict):
        if self.interrupted:  # what an interrupted child reports is not its program's fault
            return
        info = self.pending_programs[index]
        fam = info["family"]
        with self.lock:
            if config != REF and verdict != "SKIPPED":
                self.summary["kernels"] += 1
            c = self.summary["counts"].setdefault(config, {})
            c[verdict] = c.get(verdict, 0) + 1
            if config != REF:
                f = self.summary["by_family"].setdefault(fam, {})
                f[verdict] = f.get(verdict, 0) + 1
            line = {"index": index, "family": fam, "config": config, "verdict": verdict,
                    "signature": rec.get("signature", ""), "stage": rec.get("stage", "")}
            if verdict not in ("PASS", "OK"):
                line["detail"] = (rec.get("detail") or "")[:1500]
            self.results.write(json.dumps(line) + "\n")
            self.results.flush()
            if verdict == "REFUSED":
                key = f"{config}: {rec.get('signature', '')}"
                e = self.summary["refusals"].setdefault(key, {"count": 0, "first": info["desc"]})
                e["count"] += 1
            if verdict == "SKIPPED":
                key = f"{config}: {rec.get('detail', '')}"
                self.summary["skipped"][key] = self.summary["skipped"].get(key, 0) + 1
            if verdict in FINDINGS:
                info["failed"] = True
                self._keep_failure(index, info, config, verdict, rec)

    def _keep_failure(self, index, info, config, verdict, rec):
        sig = f"{verdict} {info['family']} [{config}]: {rec.get('signature', '')}"
        entry = self.summary["signatures"].get(sig)
        if entry is None:
            h = hashlib.sha1(sig.encode()).hexdigest()[:10]
            d = self.out / "failures" / f"{verdict}_{info['family']}_{h}"
            d.mkdir(parents=True, exist_ok=True)
            shutil.copy(info["path"], d / "prog.py")
            (d / "result.json").write_text(json.dumps({"config": config, **rec}, indent=1))
            entry = self.summary["signatures"][sig] = {
                "verdict": verdict, "family": info["family"], "config": config, "count": 0,
                "dir": str(d), "first_desc": info["desc"],
                "detail": (rec.get("detail") or "")[:1500], "examples": []}
            print(f"NEW {sig}\n    {d}/prog.py  ({info['desc'][:160]})", flush=True)
        entry["count"] += 1
        if len(entry["examples"]) < 8:
            ex = Path(entry["dir"]) / f"p{index}.py"
            if not ex.exists():
                shutil.copy(info["path"], ex)
            entry["examples"].append(f"p{index}: {info['desc'][:200]}")

    def finish_program(self, index: int):
        """One more of its kernels is done; at the last, its files go
        (a failing program's file stays in programs/ and failures/)."""
        with self.lock:
            info = self.pending_programs[index]
            info["left"] -= 1
            if info["left"] > 0:
                return
            del self.pending_programs[index]
        shutil.rmtree(info["art"], ignore_errors=True)
        if not info.get("failed"):
            Path(info["path"]).unlink(missing_ok=True)

    # -- compile side ------------------------------------------------------------

    def compile_verdict(self, r: dict) -> str:
        v = r["verdict"]
        if v == "OK":
            return "OK"
        if v == "SKIPPED":
            return "SKIPPED"
        if v in ("DIAGNOSTIC", "INTERNAL_ERROR", "HARNESS"):
            text = (r.get("detail") or "") + r.get("signature", "")
            if any(re.search(p, text) for p in KNOWN_LIMITS):
                return "REFUSED"
            return "COMPILE_ERROR"
        return {"TIMEOUT": "HANG", "MEMORY": "CRASH", "CRASH": "CRASH"}.get(v, "COMPILE_ERROR")

    def compile_program(self, child: Child, index: int):
        args = self.args
        info = self.pending_programs[index]
        todo = list(args.configs)
        cpu = True
        while cpu or todo:
            if child.alive() and child.served >= args.programs_per_worker:
                child.stop()
            child.send({"prog": info["path"], "configs": todo, "art": info["art"], "cpu": cpu})
            step, started = ("cpu" if cpu else todo[0]), time.monotonic()
            while True:
                line = child.readline(args.compile_timeout - (time.monotonic() - started))
                if line is None or line == "":
                    if line is None:
                        child.stop()
                        verdict, sig, detail = "TIMEOUT", f"no end in {args.compile_timeout:.0f} s", ""
                    else:
                        rc, tail = child.death()
                        mem = any(m in tail for m in ("bad_alloc", "out of memory", "MemoryError"))
                        verdict = "MEMORY" if mem else "CRASH"
                        sig, detail = rp._crash_sig(tail, rc, step), f"exit status {rc}\n{tail}"
                    r = {"verdict": verdict, "signature": f"{step}: {sig}", "detail": detail,
                         "stage": step}
                    if step == "cpu":
                        self.record(index, REF, {"TIMEOUT": "HANG"}.get(verdict, "CRASH"), r)
                        cpu = False
                    else:
                        self.record(index, step, self.compile_verdict(r), r)
                        todo.remove(step)
                        self.finish_program(index)
                    break  # the rest again, in a fresh worker
                if line == "DONE":
                    cpu, todo = False, []
                    break
                if not line.startswith("STAGE "):
                    continue
                s = line[6:]
                if s.startswith("cpu-result "):
                    r = json.loads(s[len("cpu-result "):])
                    v = {"OK": "PASS", "DIAGNOSTIC": "COMPILE_ERROR",
                         "INTERNAL_ERROR": "COMPILE_ERROR"}.get(r["verdict"], r["verdict"])
                    if v == "COMPILE_ERROR" and r.get("stage") == "cpu-run":
                        v = "CRASH"
                    self.record(index, REF, v, r)
                    cpu = False
                    self.compile_seconds.append(time.monotonic() - started)
                elif s.startswith("compile-result "):
                    r = json.loads(s[len("compile-result "):])
                    name = r["config"]
                    v = self.compile_verdict(r)
                    todo.remove(name)
                    with self.lock:
                        paths = self.summary["paths"].setdefault(name, {})
                        for k in r.get("paths", []):
                            paths[k] = paths.get(k, 0) + 1
                    self.compile_seconds.append(time.monotonic() - started)
                    if v == "OK" and not args.dry:
                        self.run_queue.put((index, name))
                    else:
                        self.record(index, name, "PASS" if v == "OK" else v, r)
                        self.finish_program(index)
                elif s.startswith("compile "):
                    step = s.split()[1]
                elif s.startswith("harness-error "):
                    # The generated file itself is broken: a bug of the
                    # generator, shown as a harness error, not a finding.
                    r = json.loads(s[len("harness-error "):])
                    with self.lock:
                        self.summary.setdefault("errors", []).append(
                            f"program {info['path']} does not run: {r['detail']}")
                    print(f"HARNESS ERROR {info['path']}: {r['detail'][-800:]}", flush=True)
                    info["failed"] = True
                    for _ in todo:
                        self.finish_program(index)
                    return
                else:
                    continue
                started = time.monotonic()

    # -- run side ------------------------------------------------------------------

    def runner_loop(self, device: str, k: int):
        args = self.args
        child = Child([sys.executable, os.path.abspath(__file__), "--runner", device],
                      self.out / f"runner{k}-stderr.txt")
        self.children.append(child)
        ready = False
        while True:
            item = self.run_queue.get()
            if item is None:
                break
            index, config = item
            info = self.pending_programs[index]
            if not ready:
                child.start()
                line = child.readline(args.runner_start_timeout)
                if not line or not line.startswith("READY"):
                    rc, tail = child.death() if line == "" else (None, "")
                    child.stop()
                    raise RuntimeError(f"the GPU runner did not start ({line!r}, {rc}):\n{tail}")
                self.summary["device"] = line[6:]
                ready = True
            t0 = time.monotonic()
            child.send({"prog": info["path"], "art": info["art"], "config": config})
            while True:
                line = child.readline(args.run_timeout - (time.monotonic() - t0))
                if line is None:
                    child.stop()
                    ready = False
                    res = {"verdict": "HANG", "signature": f"no end in {args.run_timeout:.0f} s",
                           "detail": f"killed after {args.run_timeout:.0f} s"}
                    break
                if line == "":
                    rc, tail = child.death()
                    ready = False
                    res = {"verdict": "CRASH", "signature": rp._crash_sig(tail, rc, "run"),
                           "detail": f"runner exit status {rc}\n{tail}"}
                    break
                if line.startswith("RESULT "):
                    res = json.loads(line[7:])
                    if res["verdict"] == "CRASH" and res["signature"].startswith("cuda:"):
                        child.stop()  # the runner ends itself; do not wait for it
                        ready = False
                    break
            self.run_seconds.append(time.monotonic() - t0)
            self.record(index, config, res["verdict"], res)
            self.finish_program(index)
        child.stop()

    # -- driving ---------------------------------------------------------------------

    def smoke(self) -> Optional[str]:
        """A program that must pass everywhere: else the installation is
        broken and every program would fail the same way."""
        prog = rp.Gen(random.Random(0), False, False).copy_smoke()
        path = self.out / "programs" / "smoke.py"
        path.write_text(gp.source(prog, 0, 0, 1))
        art = self.out / "art" / "smoke"
        art.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, TILELANG_MLIR_DISABLE_CACHE="1")
        code = ("import runpy, json, sys; m = runpy.run_path(sys.argv[1], run_name='__fuzz__'); "
                "r = m['compile_all'](sys.argv[3].split(','), sys.argv[2], "
                "lambda s: print(s, flush=True) if 'result' in s else None); "
                "[print(json.dumps(m['run_artifact'](sys.argv[2], c))) for c in sys.argv[4].split(',') if c]")
        runs = "" if self.args.dry else ",".join(self.args.configs)
        p = subprocess.run([sys.executable, "-c", code, str(path), str(art),
                            ",".join(self.args.configs), runs], capture_output=True, text=True,
                           env=env, timeout=600)
        bad = [ln for ln in p.stdout.splitlines()
               if '"verdict"' in ln and not re.search(r'"verdict": "(OK|PASS)"', ln)]
        if p.returncode != 0 or bad:
            return (p.stdout[-3000:] + p.stderr[-3000:])
        shutil.rmtree(art, ignore_errors=True)
        path.unlink()
        return None

    def run(self) -> int:
        args = self.args
        t0 = time.monotonic()
        failure = self.smoke()
        if failure is not None:
            print(f"the smoke program fails: the installation is broken, nothing fuzzed\n{failure}",
                  flush=True)
            self.summary["smoke_failure"] = failure
            self.save()
            return 2
        self.summary["timing"]["smoke_s"] = round(time.monotonic() - t0, 1)
        runners = []
        if not args.dry:
            device = "cpu" if all(gp.CONFIGS[c][0] == "cpu" for c in args.configs) else "cuda"
            runners = [threading.Thread(target=self._guard, args=(self.runner_loop, device, k),
                                        daemon=True) for k in range(args.runners)]
            for r in runners:
                r.start()
        indices: "queue.Queue" = queue.Queue()
        for i in range(args.start, args.start + args.count):
            indices.put(i)
        stop_at = t0 + args.budget_s if args.budget_s else None

        def compile_loop(k):
            child = Child([sys.executable, os.path.abspath(__file__), "--compile-worker"],
                          self.out / f"worker{k}-stderr.txt", args.mem_mb)
            self.children.append(child)
            try:
                while True:
                    if stop_at and time.monotonic() > stop_at:
                        return
                    try:
                        i = indices.get_nowait()
                    except queue.Empty:
                        return
                    try:
                        prog = self.make_program(i)
                        src = gp.source(prog, args.seed, i, rp.input_seed(args.seed, i))
                    except Exception:  # noqa: BLE001 (a bug of the generator)
                        import traceback
                        msg = f"generating program {i}: {traceback.format_exc()[-2000:]}"
                        print("HARNESS ERROR " + msg, flush=True)
                        with self.lock:
                            self.summary.setdefault("errors", []).append(msg)
                        continue
                    path = self.out / "programs" / f"p{i}.py"
                    path.write_text(src)
                    art = self.out / "art" / f"p{i}"
                    art.mkdir(parents=True, exist_ok=True)
                    with self.lock:
                        self.pending_programs[i] = {"family": prog.family, "desc": prog.desc,
                                                    "path": str(path), "art": str(art),
                                                    "left": len(args.configs)}
                        self.summary["programs"] += 1
                    self.compile_program(child, i)
                    if args.verbose:
                        print(f"[{i}] {prog.family} compiled: {prog.desc[:120]}", flush=True)
            finally:
                child.stop()

        workers = [threading.Thread(target=self._guard, args=(compile_loop, k), daemon=True)
                   for k in range(args.jobs)]
        for w in workers:
            w.start()
        last = time.monotonic()
        # SIGTERM (a time limit) ends the campaign as Ctrl-C does: what was
        # recorded is saved, the children are killed.
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            while any(w.is_alive() for w in workers):
                for w in workers:
                    w.join(timeout=5)
                if time.monotonic() - last > 30:
                    last = time.monotonic()
                    self.progress(t0)
            compiled = time.monotonic()
            for _ in runners:
                self.run_queue.put(None)
            while any(r.is_alive() for r in runners):
                for r in runners:
                    r.join(timeout=5)
                    if time.monotonic() - last > 30:
                        last = time.monotonic()
                        self.progress(t0)
        except KeyboardInterrupt:
            self.interrupted = True
            compiled = time.monotonic()
            for c in list(self.children):
                try:
                    os.killpg(c.proc.pid, signal.SIGKILL)
                except (AttributeError, ProcessLookupError):
                    pass
            print(f"interrupted after {compiled - t0:.0f} s: the table holds what finished",
                  flush=True)
            self.summary["interrupted_after_s"] = round(compiled - t0)
        self.summary["timing"].update({
            "total_s": round(time.monotonic() - t0, 1),
            "compile_phase_s": round(compiled - t0, 1),
            "compile_step_mean_s": round(sum(self.compile_seconds) / max(1, len(self.compile_seconds)), 3),
            "run_mean_s": round(sum(self.run_seconds) / max(1, len(self.run_seconds)), 3)})
        if stop_at and indices.qsize():
            self.summary["budget_stopped_with_left"] = indices.qsize()
        table = self.save()
        print(table, flush=True)
        if self.interrupted:
            return 130
        return 1 if self.summary.get("errors") or any(
            n for c in self.summary["counts"].values() for v, n in c.items() if v in FINDINGS) else 0

    def _guard(self, fn, *a):
        """A thread's function; an error of the harness is recorded and
        shown, and stops nothing else."""
        try:
            fn(*a)
        except BaseException as e:  # noqa: BLE001
            import traceback
            msg = f"{type(e).__name__}: {e}\n{traceback.format_exc()[-3000:]}"
            print("HARNESS ERROR " + msg, flush=True)
            with self.lock:
                self.summary.setdefault("errors", []).append(msg)
            if fn == self.runner_loop:  # drain: nothing will run them (with one runner)
                while self.args.runners == 1:
                    item = self.run_queue.get()
                    if item is None:
                        break

    def progress(self, t0):
        c = self.summary["counts"]
        parts = " ".join(f"{k}:" + ",".join(f"{v}={n}" for v, n in sorted(d.items()))
                         for k, d in sorted(c.items()))
        print(f"... {time.monotonic() - t0:.0f} s: {self.summary['programs']} programs, "
              f"{self.run_queue.qsize()} kernels waiting for the GPU; {parts}", flush=True)
        self.save()

    def save(self) -> str:
        """Writes summary.json and table.md (also while running: a campaign
        cut off keeps what it did); returns the table."""
        with self.lock:
            text = json.dumps(self.summary, indent=1, sort_keys=True)
            table = self.table()
        for name, data in (("summary.json", text), ("table.md", table + "\n")):
            tmp = self.out / (name + ".tmp")
            tmp.write_text(data)
            tmp.replace(self.out / name)
        return table

    def table(self) -> str:
        s = self.summary
        cols = [c for c in COLUMNS if not (self.args.dry and c == "MISMATCH")]
        head = "PASS" if not self.args.dry else "COMPILED"
        names = [head if c == "PASS" else c.lower().replace("_", " ") for c in cols]
        lines = [f"GPU campaign: seed {s['seed']}, programs {s['start']}..{s['start'] + s['programs'] - 1} "
                 f"({s['programs']} programs, {s['kernels']} kernels), configs {', '.join(s['configs'])}, "
                 f"{'dry (compile only)' if self.args.dry else 'device ' + s.get('device', '?')}, "
                 f"{s['timing'].get('total_s', '?')} s on {s['jobs']} jobs", "",
                 "| config | " + " | ".join(names) + " |", "|---|" + "---|" * len(cols)]
        total = {c: 0 for c in cols}
        for config in [REF] + list(s["configs"]):
            d = s["counts"].get(config, {})
            lines.append(f"| {config} | " + " | ".join(str(d.get(c, 0)) for c in cols) + " |")
            if config != REF:
                for c in cols:
                    total[c] += d.get(c, 0)
        lines.append("| **GPU kernels** | " + " | ".join(f"**{total[c]}**" for c in cols) + " |")
        lines += ["", "| family (GPU kernels) | " + " | ".join(names) + " |", "|---|" + "---|" * len(cols)]
        for fam, d in sorted(s["by_family"].items()):
            lines.append(f"| {fam} | " + " | ".join(str(d.get(c, 0)) for c in cols) + " |")
        if any(s["paths"].values()):
            lines += ["", "Compiled kernels using each path (read off the PTX and the launch):", ""]
            keys = sorted({k for d in s["paths"].values() for k in d})
            lines += ["| config | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
            for config, d in s["paths"].items():
                lines.append(f"| {config} | " + " | ".join(str(d.get(k, 0)) for k in keys) + " |")
        if s["signatures"]:
            lines += ["", "Findings (first reproducer of each signature):"]
            for sig, e in sorted(s["signatures"].items()):
                lines.append(f"- {sig} (x{e['count']}): {e['dir']}/prog.py")
        if s["refusals"]:
            lines += ["", "Refused (KNOWN_LIMITS):"]
            lines += [f"- {k} (x{e['count']})" for k, e in sorted(s["refusals"].items())]
        t = s["timing"]
        lines += ["", f"compile phase {t.get('compile_phase_s')} s, mean compile step "
                      f"{t.get('compile_step_mean_s')} s, mean device run {t.get('run_mean_s')} s"]
        if s.get("errors"):
            lines += ["", f"HARNESS ERRORS: {len(s['errors'])} (summary.json 'errors')"]
        return "\n".join(lines)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None, make_program=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=100, help="programs (kernels: x configs)")
    ap.add_argument("--start", type=int, default=0, help="index of the first program")
    ap.add_argument("--out", type=Path, default=Path("/tmp/gpu-campaign"))
    ap.add_argument("--configs", default=",".join(gp.DEFAULT_CONFIGS),
                    help="comma-separated subset of " + ", ".join(gp.CONFIGS))
    ap.add_argument("--families", help="comma-separated subset of " + ",".join(gp.FAMILIES))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="compile workers")
    ap.add_argument("--dry", action="store_true", help="compile only (no GPU needed)")
    ap.add_argument("--runners", type=int, default=2,
                    help="runner processes sharing the GPU (each kernel runs in one of them)")
    ap.add_argument("--compile-timeout", type=float, default=180,
                    help="seconds per compile step (the CPU part, or one config)")
    ap.add_argument("--run-timeout", type=float, default=30, help="seconds per device run")
    ap.add_argument("--runner-start-timeout", type=float, default=180)
    ap.add_argument("--mem-mb", type=int, default=6000, help="address space of a compile worker")
    ap.add_argument("--programs-per-worker", type=int, default=40,
                    help="a compile worker is restarted after this many programs (every CPU "
                         "kernel keeps threads and memory)")
    ap.add_argument("--budget-s", type=float, default=0,
                    help="start no new program after this many seconds (the rest is recorded)")
    ap.add_argument("--compile-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--runner", choices=["cuda", "cpu"], help=argparse.SUPPRESS)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.compile_worker:
        return compile_child()
    if args.runner:
        return runner_child(args.runner)
    args.configs = [c for c in args.configs.split(",") if c]
    bad = [c for c in args.configs if c not in gp.CONFIGS]
    if bad:
        ap.error(f"unknown configs {bad}; known: {', '.join(gp.CONFIGS)}")
    args.families = args.families.split(",") if args.families else None
    if args.families and any(f not in gp.FAMILIES for f in args.families):
        ap.error(f"unknown families; known: {', '.join(gp.FAMILIES)}")
    if args.out.exists():
        shutil.rmtree(args.out)
    for d in ("programs", "art", "failures"):
        (args.out / d).mkdir(parents=True, exist_ok=True)
    return Campaign(args, make_program).run()


if __name__ == "__main__":
    sys.exit(main())
