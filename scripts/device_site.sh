# Sourced by the scripts that run on the GPU machine (the device tool):
# the two Python sites they import from.
#   site_ours      the cp312 wheel of dist/ (or the one an earlier call of a
#                  warm machine installed) with this tree's Python over it,
#                  in /tmp/wsite
#   site_tilelang  TileLang's PyPI wheel and its dependencies' wheels from
#                  ${TLW:-/tmp/tlw} (copied there over two calls: over one
#                  call's 64 MiB), in /tmp/tlsite
site_ours() {
  # SITE_READY: an earlier script of the same call installed it (two scripts
  # running side by side must not reinstall under each other)
  [ -n "${SITE_READY:-}" ] && [ -d /tmp/wsite/tilelang_mlir ] && return 0
  if [ ! -d /tmp/wsite/tilelang_mlir ] || [ -n "$(ls dist/*cp312*.whl 2>/dev/null)" ]; then
    local whl
    whl=$(ls dist/*cp312*.whl 2>/dev/null | head -1)
    [ -n "$whl" ] || { echo "no dist/*cp312*.whl: make wheel WHEEL_PYTHON=python3.12 and carry it"; exit 2; }
    rm -rf /tmp/wsite && python3 -m pip install --no-index --no-deps --quiet --target /tmp/wsite "$whl" 2>&1 | grep -v WARNING
  fi
  # ml_dtypes (the GPU campaign's float8 references), carried in .whl/ where
  # the machine's Python lacks it
  if ! python3 -c "import ml_dtypes" 2>/dev/null && ls .whl/ml_dtypes*.whl >/dev/null 2>&1; then
    python3 -m pip install --no-index --no-deps --quiet --target /tmp/wsite .whl/ml_dtypes*.whl 2>&1 | grep -v WARNING
  fi
  cp -r python/tilelang_mlir/. /tmp/wsite/tilelang_mlir/
}

site_tilelang() {
  rm -rf /tmp/tlsite && python3 -m pip install --no-index --no-deps --quiet --target /tmp/tlsite ${TLW:-/tmp/tlw}/*.whl 2>&1 | grep -v WARNING
  PYTHONPATH=/tmp/tlsite python3 -c "import tilelang; print('TileLang', tilelang.__version__)" 2>&1 | tail -1
}
