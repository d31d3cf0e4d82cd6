# tilelang-mlir: two commands for a fresh machine.
#   make demo   set everything up, compile and run the seed GEMM
#   make test   set everything up, run every test (lit + pytest)
# Both create .venv in the checkout, install the pinned toolchain there, build
# incrementally into build/ and install tile-opt and the package into .venv.

PYTHON ?= python3
VENV   := .venv
BUILD  := build
VPY    := $(VENV)/bin/python
JOBS   ?= $(shell nproc)

.PHONY: all demo test build lit pytest docs clean distclean

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
pytest: build
	$(VPY) -m pytest -q test/python; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; rc=0; fi; exit $$rc

test: lit pytest

# --- demo ---------------------------------------------------------------------
demo: build
	$(VPY) examples/gemm/gemm.py

# --- docs ---------------------------------------------------------------------
docs: build
	cmake --build $(BUILD) --target tile-doc

clean:
	rm -rf $(BUILD) $(BUILD).configure.log

distclean: clean
	rm -rf $(VENV)
