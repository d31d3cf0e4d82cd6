# tilelang-mlir: two commands for a fresh machine.
#   make demo   set everything up, compile and run the seed GEMM
#   make test   set everything up, run every test (lit + pytest, the docs
#               build, then the CPU tests again against the self-contained wheel)
#   make docs   the documentation site, into build/docs/html (tutorials run on the CPU)
# Both create .venv in the checkout, install the pinned toolchain there, build
# incrementally into build/ and install tile-opt and the package into .venv.
#   make wheel [WHEEL_PYTHON=/path/to/python3.12]   the manylinux wheel, in dist/
#   make gpu-test   (on a GPU machine) every GPU-marked test, the examples on
#               the GPU and the compute-sanitizer set (scripts/gpu.sh; no
#               build step: it uses the carried wheel of dist/ or the
#               built checkout); fails on any failure

PYTHON ?= python3
VENV   := .venv
BUILD  := build
VPY    := $(VENV)/bin/python
JOBS   ?= $(shell nproc)

.PHONY: all demo test build lit pytest wheel wheel-test docs gpu-test clean distclean

all: build

# --- environment ------------------------------------------------------------
$(VENV)/.deps-stamp: requirements/build.txt requirements/test.txt
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --disable-pip-version-check -r requirements/test.txt
	touch $@

# --- build --------------------------------------------------------------------
# CMake re-runs on every build (a few seconds) so that new Python files, which
# are globbed, are picked up.
build: $(VENV)/.deps-stamp
	@SP=$$($(VPY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	cmake -G Ninja -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DMLIR_DIR=$$SP/mlir/lib/cmake/mlir -DLLVM_DIR=$$SP/llvm/lib/cmake/llvm \
	  -DPython3_EXECUTABLE=$(CURDIR)/$(VPY) -DPython_EXECUTABLE=$(CURDIR)/$(VPY) \
	  > $(BUILD).configure.log 2>&1 || { cat $(BUILD).configure.log; exit 1; }; \
	cmake --build $(BUILD) -j $(JOBS) && \
	echo "$(CURDIR)/$(BUILD)/python_packages" > $$SP/tilelang_mlir.pth && \
	ln -sf $(CURDIR)/$(BUILD)/bin/tile-opt $(VENV)/bin/tile-opt

# --- tests --------------------------------------------------------------------
lit: build
	$(VENV)/bin/lit -sv $(BUILD)/test/lit

# pytest exits with 5 when it collects no test: that is not a failure.
# test/fuzz: a fixed-seed slice of each fuzzer (test/fuzz/README.md).
# The tests run on JOBS worker processes (pytest-xdist).
pytest: build
	$(VPY) -m pytest -q -n $(JOBS) test/python test/fuzz; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; rc=0; fi; exit $$rc

test: lit pytest docs wheel-test

# --- the GPU machine -------------------------------------------------------------
# SUITES: some of tests, examples, sanitize, distributed, bench-NAME
# (default: the first three, and distributed with two or more GPUs).
gpu-test:
	bash scripts/gpu.sh $(SUITES)

# --- the self-contained wheel --------------------------------------------------
# Built with the interpreter WHEEL_PYTHON in its own virtual environment
# (the toolchain of requirements/wheel.txt; .venv itself when it is the
# default interpreter), then retagged manylinux by auditwheel.
WHEEL_PYTHON ?= $(PYTHON)
WHEEL_TAG := $(shell $(WHEEL_PYTHON) -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
WVENV := $(if $(filter $(WHEEL_PYTHON),$(PYTHON)),$(VENV),.venv-$(WHEEL_TAG))
WPY := $(WVENV)/bin/python

$(WVENV)/.wheel-stamp: requirements/wheel.txt requirements/build.txt
	@test -n "$(WHEEL_TAG)" || { echo "WHEEL_PYTHON=$(WHEEL_PYTHON) does not run" >&2; exit 1; }
	test -x $(WPY) || $(WHEEL_PYTHON) -m venv $(WVENV)
	$(WPY) -m pip install --quiet --disable-pip-version-check -r requirements/wheel.txt
	touch $@

wheel: $(WVENV)/.wheel-stamp
	rm -rf dist/raw-$(WHEEL_TAG) dist/tilelang_mlir-*-$(WHEEL_TAG)-*.whl
	$(WPY) -m pip wheel . --quiet --no-deps --no-build-isolation -w dist/raw-$(WHEEL_TAG)
	PATH=$(CURDIR)/$(WVENV)/bin:$$PATH $(WVENV)/bin/auditwheel repair dist/raw-$(WHEEL_TAG)/*.whl -w dist
	@ls -l dist/tilelang_mlir-*-$(WHEEL_TAG)-*.whl

# The CPU tests against the installed wheel, in a fresh environment that has
# only the wheel and requirements/wheel-test.txt (no toolchain, no build/).
wheel-test: wheel
	rm -rf .venv-wheeltest
	$(WHEEL_PYTHON) -m venv .venv-wheeltest
	.venv-wheeltest/bin/python -m pip install --quiet --disable-pip-version-check \
	  -r requirements/wheel-test.txt dist/tilelang_mlir-*-$(WHEEL_TAG)-*.whl
	cd test/python && ../../.venv-wheeltest/bin/python -c \
	  'import tilelang_mlir, os; print("testing", os.path.dirname(tilelang_mlir.__file__))'
	.venv-wheeltest/bin/python -m pytest -q -n $(JOBS) -p no:cacheprovider test/python; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; rc=0; fi; exit $$rc

# --- demo ---------------------------------------------------------------------
demo: build
	$(VPY) examples/gemm/gemm.py

# --- docs ---------------------------------------------------------------------
# The site (docs/conf.py): Sphinx with MyST and sphinx-gallery, pinned in
# requirements/docs.txt. tile-doc refreshes the ODS reference in
# docs/generated/ first; the build executes every tutorial on the CPU and
# fails on any warning (-W), dangling references included (-n).
$(VENV)/.docs-stamp: requirements/docs.txt $(VENV)/.deps-stamp
	$(VPY) -m pip install --quiet --disable-pip-version-check -r requirements/docs.txt
	touch $@

docs: build $(VENV)/.docs-stamp
	cmake --build $(BUILD) --target tile-doc
	$(VPY) -m sphinx -W --keep-going -n -q -b html docs $(BUILD)/docs/html
	@echo "docs: $(BUILD)/docs/html/index.html"

clean:
	rm -rf $(BUILD) $(BUILD).configure.log docs/auto_tutorials docs/reference/_generated \
	  docs/performance/_generated docs/sg_execution_times.rst

distclean: clean
	rm -rf $(VENV) .venv-cp* .venv-wheeltest dist
