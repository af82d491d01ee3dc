# gpc_literate: the book and the package it builds.
#   make book        create .venv if missing, install, render the book to _build/html
#   make test        check chapters and package are in sync, run unit tests and every chapter (nbval)
#   make export      write gpc_literate/*.py from the chapters' cells tagged `export`
#   make check-sync  fail with a diff if a module differs from its chapter
#   make benchmark   run the speed benchmarks (not part of the tests)
#   make clean       remove _build

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NBDIR  := _build/nbval
# Two pytest workers (CI has two cores), each file on one worker so a chapter keeps its
# kernel; one BLAS thread per process, since threaded BLAS on an oversubscribed machine is
# many times slower than single-threaded.
JOBS   ?= 2
PYTEST_ARGS ?=
export OPENBLAS_NUM_THREADS := 1
export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1

.PHONY: install export check-sync notebooks test book benchmark clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

export: $(STAMP)
	$(BIN)/python tools/tangle.py

check-sync: $(STAMP)
	$(BIN)/python tools/tangle.py --check

notebooks: $(STAMP)
	$(BIN)/python tools/notebooks.py --out $(NBDIR)

test: check-sync notebooks
	MPLBACKEND=Agg $(BIN)/python -m pytest tests $(NBDIR) --nbval-lax --nbval-current-env \
	    --nbval-cell-timeout=3600 -p no:cacheprovider -n $(JOBS) --dist loadfile $(PYTEST_ARGS)

book: $(STAMP)
	rm -rf _build/html _build/.doctrees _build/jupyter_execute
	$(BIN)/jupyter-book build . --all --warningiserror --keep-going

benchmark: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf _build
