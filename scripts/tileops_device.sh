#!/bin/bash
# TileOPs' test suite (tile-ai/TileOPs, an operator library written in
# TileLang) on the GPU machine through the compat route, from the repository
# root; results in $OUT. The checkout is carried as .tileops (its src/,
# tests/, pyproject.toml and conftest; docs/compat.md names the commit):
#
#   IDS=.tileops/sample.txt bash scripts/tileops_device.sh   # chosen test ids
#   MARK=smoke bash scripts/tileops_device.sh                # a whole tier
#
# One pytest process per test file, N at a time (a sticky CUDA error fails
# the rest of its own file only), each test within TMO seconds, all within
# DEADLINE seconds. $OUT/tileops.txt: a summary line per file and the totals;
# $OUT/tileops_logs.tgz: each file's log (failures with their reasons).
set -u
OUT=${OUT:?run on the device machine, where OUT is set}
[ -d .tileops/tests/ops ] || { echo "no .tileops/tests/ops (carry the checkout)"; exit 2; }
. scripts/device_site.sh
site_ours
export PYTHONUNBUFFERED=1 TILELANG_MLIR_CACHE_DIR=/tmp/tlcache
export PYTHONPATH=/tmp/wsite:$(pwd)/.tileops/src
LOGS=$OUT/tileops_logs; mkdir -p $LOGS
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/card.txt
one() {  # one test file: its ids from $IDS, or its tests of mark $MARK
  local f=$1 log=$LOGS/$(echo $1 | tr / _).log args
  if [ -n "${IDS:-}" ]; then args=$(grep "^$f::" "$IDS" | tr '\n' ' '); else args="$f -m ${MARK:-smoke}"; fi
  (cd .tileops && eval python3 -m pytest -q -rfE -p no:cacheprovider \
      -p tilelang_mlir.compat.pytest_plugin --tl-impl=ours \
      --timeout ${TMO:-180} $args) > $log 2>&1
  echo "$f: $(tail -1 $log)"
}
export -f one; export IDS=${IDS:-} MARK=${MARK:-smoke} TMO=${TMO:-180} LOGS
if [ -n "${IDS:-}" ]; then files=$(cut -d: -f1 "$IDS" | sort -u); else files=$(cd .tileops && find tests/ops -name "test_*.py" | sort); fi
timeout ${DEADLINE:-500} bash -c "printf '%s\n' $(echo $files) | xargs -P ${N:-8} -I{} bash -c 'one {}'" \
  | tee $OUT/tileops.txt
python3 - $OUT/tileops.txt <<'PY' | tee -a $OUT/tileops.txt
import re, sys, collections
tot = collections.Counter()
for line in open(sys.argv[1]):
    for n, k in re.findall(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)", line):
        tot[k.rstrip("s") if k.startswith("error") else k] += int(n)
print("total", dict(tot))
PY
tar czf $OUT/tileops_logs.tgz -C $OUT tileops_logs && rm -rf $LOGS
