#!/usr/bin/env python3
"""Where ptxas puts the rotated attention loop's wgmma.wait_group 0 relative to
the softmax's MUFU.EX2 (issue 6).

  scripts/investigations/wgmma_wait_probe.py CACHE_ENTRY.json [--nanosleep]

takes the PTX of a kernel-cache entry (the `binary` stage), optionally puts
`nanosleep.u32 0;` before every wgmma.wait_group 0 but the first (the
experiment: a ptxas scheduling barrier), runs ptxas -O3 and nvdisasm
(NVDISASM=path) and prints registers/spills and the run-length sequence of
HGMMA / DEPBAR / MUFU.EX2 / BRA. In the rotated loop the wanted order is
`16 HGMMA; DEPBAR 0x1; [BRA;] 66 MUFU.EX2; DEPBAR 0x0`.
"""
import json, os, re, subprocess, sys, tempfile

entry, sleep = sys.argv[1], "--nanosleep" in sys.argv
b = json.load(open(entry))["stages"]["binary"]
i = b.find('assembly = "') + len('assembly = "')
j = b.find('"', i)
while b[j - 1] == "\\":
    j = b.find('"', j + 1)
ptx = re.sub(r"\\([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), b[i:j]).replace("\\\\", "\\")
if sleep:
    w = "\twgmma.wait_group.sync.aligned \t0;"
    k = ptx.find(w) + len(w)
    ptx = ptx[:k] + ptx[k:].replace(w, "\tnanosleep.u32 0;\n" + w)
with tempfile.TemporaryDirectory() as d:
    p, c = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
    open(p, "w").write(ptx)
    info = subprocess.run(["ptxas", "-arch=sm_90a", "-O3", "-v", p, "-o", c],
                          capture_output=True, text=True).stderr
    print(" ".join(re.findall(r"Used \d+ registers|\d+ bytes spill stores|C75\d\d", info)))
    sass = subprocess.run([os.environ.get("NVDISASM", "nvdisasm"), "-c", c],
                          capture_output=True, text=True, check=True).stdout
marks = re.findall(r"HGMMA|WARPGROUP\.DEPBAR\.LE gsb0, 0x[01]|MUFU\.EX2|NANOSLEEP|\bBRA\b", sass)
out, n = [], 1
for a, nxt in zip(marks, marks[1:] + [None]):
    if a == nxt:
        n += 1
    else:
        out.append(f"{n} {a}" if n > 1 else a)
        n = 1
print("; ".join(out))
