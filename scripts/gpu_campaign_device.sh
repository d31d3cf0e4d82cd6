#!/bin/bash
# The GPU fuzz campaign (test/fuzz/gpu_campaign.py) on the GPU machine (the
# device tool), from the repository root, carrying dist/<the cp312 wheel>
# (make wheel WHEEL_PYTHON=python3.12): installs the wheel, overlays this
# tree's Python sources (as scripts/corpus_device.sh does), checks what the
# run needs (torch with a GPU, ml_dtypes, cuda.bindings, ptxas), runs the
# campaign and leaves in $OUT: table.md, summary.json, campaign.log and
# campaign.tgz (results.jsonl, failures/ with a standalone prog.py per
# finding, the workers' stderr).
#
#   SEED=44 COUNT=1100 bash scripts/gpu_campaign_device.sh
#
# COUNT programs give about 3 x COUNT kernels (configs ws, nows, sm80; about
# 2% skip: float8 on sm80, float64 math functions anywhere). BUDGET (s,
# default 420) stops starting new programs, LIMIT (s, default 540) ends the
# campaign whatever it is doing (the table and summary are saved every 30 s),
# so that the command ends inside the device's 10 minutes. ARGS are passed on (--configs, --families,
# --jobs ...). If ml_dtypes is missing there, carry its cp312 wheel in .whl/.
set -u
OUT=${OUT:?run on the device machine, where OUT is set}
if [ -z "${WSITE_READY:-}" ]; then  # (gpu_wheel_session.sh installed it already)
  . scripts/device_site.sh
  site_ours
fi
export PYTHONPATH=/tmp/wsite PYTHONUNBUFFERED=1
python3 - <<'EOF' || exit 2
import torch, numpy, ml_dtypes, tilelang_mlir
from cuda.bindings import driver  # noqa: F401 (the runtime launches through it)
from tilelang_mlir.compiler.cuda import find_ptxas
print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, numpy {numpy.__version__}, "
      f"ml_dtypes {ml_dtypes.__version__}, ptxas {find_ptxas()}, {tilelang_mlir.__file__}")
EOF
timeout -s INT ${LIMIT:-540} python3 test/fuzz/gpu_campaign.py --seed ${SEED:-44} --count ${COUNT:-1100} \
  --out /tmp/gpu-campaign --budget-s ${BUDGET:-420} --compile-timeout 120 ${ARGS:-} 2>&1 | tee $OUT/campaign.log | grep -v "^\.\.\. "
rc=${PIPESTATUS[0]}
cp /tmp/gpu-campaign/table.md /tmp/gpu-campaign/summary.json $OUT/ 2>/dev/null
tar czf $OUT/campaign.tgz -C /tmp/gpu-campaign results.jsonl failures $(cd /tmp/gpu-campaign && ls *stderr*.txt 2>/dev/null)
echo "campaign exit status $rc (0: nothing found, 1: findings, 2: broken installation, 124/130: LIMIT)"
exit $rc
