# gpc_literate: the book and the package it builds.
#   make book           create .venv if missing, install, render the book to _build/html
#                       (chapters whose code or imported modules changed are re-executed,
#                       JOBS at a time; the others come from the execution cache), then
#                       check the HTML, and in Chromium where it is installed
#                       (make check-browser)
#   make test           check chapters and package are in sync, lint, run unit tests and
#                       every chapter (nbval), then the browser check of the built book
#                       where Chromium is installed and the book is built (skipped with
#                       the reason otherwise)
#   make lab            JupyterLab on the chapters, which open as notebooks with their MyST
#                       rendered (jupyterlab-myst); a save without edits changes no byte
#   make check-browser  open every page of the built book in headless Chromium, offline, at
#                       1280 px: formulas, images, JS errors, and what a reader sees (code,
#                       outputs, equations, tables wider than the column, raw TeX, stderr
#                       boxes, figure text under 9 px)
#   make check-source   fail on chapter markup that shows raw TeX (a list marker inside
#                       inline math, a textless link to a heading with math)
#   make lint           ruff's lint rules (pyflakes, pycodestyle errors, bugbear) and its
#                       layout check on the package, tests, tools and benchmarks
#   make export         lay out the chapters' code cells to the column (ruff, 88 characters)
#                       and the chapters as jupytext writes them (so that JupyterLab saves
#                       them unchanged), write gpc_literate/*.py from the cells tagged
#                       `export`, and the pages of the API reference, book/api/*.md (one
#                       autodoc directive per public name of each module)
#   make check-sync     fail if a code cell is not laid out to the column, if a chapter is
#                       not as jupytext writes it, with a diff if a module differs from its
#                       chapter, or if the API pages miss a public name or are not what
#                       `make export` writes
#   make benchmark      run the speed benchmarks (not part of the tests)
#   make clean          remove _build (the next `make book` executes every chapter)

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NBDIR  := _build/nbval
# Two pytest workers (CI has two cores), each file on one worker so a chapter keeps its
# kernel; one BLAS thread per process, since threaded BLAS on an oversubscribed machine is
# many times slower than single-threaded. The chapters come first: they are the longest
# files, and the many short test files after them fill in while the last chapter runs.
JOBS   ?= 2
PYTEST_ARGS ?=
# the browser check: Debian's Chromium, and the widths it lays the pages out at
CHROMIUM ?= /usr/bin/chromium
BROWSER_WIDTHS ?= 1280
BROWSER_STAMP := $(VENV)/.browser-installed
export OPENBLAS_NUM_THREADS := 1
export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1

.PHONY: install export check-sync check-source lint check-workflows notebooks test book \
        check-html check-browser check-browser-if-present browser-deps lab benchmark clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

export: $(STAMP)
	$(BIN)/python tools/format_chapters.py
	$(BIN)/python tools/normalise_chapters.py
	$(BIN)/python tools/tangle.py
	$(BIN)/python tools/apidoc.py

check-sync: $(STAMP)
	$(BIN)/python tools/format_chapters.py --check
	$(BIN)/python tools/normalise_chapters.py --check
	$(BIN)/python tools/tangle.py --check
	$(BIN)/python tools/apidoc.py --check

# chapter markup that renders as raw TeX (tools/check_source.py; no build needed)
check-source: $(STAMP)
	$(BIN)/python tools/check_source.py

# the style gate: ruff's lint rules and layout (pyproject.toml) on the package, tests,
# tools and benchmarks; the chapters' cells are laid out by `make export`
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# the GitHub Actions workflows against the published workflow schema (vendored in
# check-jsonschema, so this runs offline)
check-workflows: $(STAMP)
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml

notebooks: $(STAMP)
	$(BIN)/python tools/notebooks.py --out $(NBDIR)

# browser-deps: where Chromium is installed, Playwright too, so that the browser checks'
# own tests (tests/test_browser_checks.py, synthetic pages) run; they skip where it is not.
# Then the browser check of the built book, where Chromium and a built book are present
# (`make book` builds it; it is skipped, saying why, where either is missing).
test: check-sync check-source lint check-workflows notebooks browser-deps
	MPLBACKEND=Agg $(BIN)/python -m pytest $(NBDIR) tests --nbval-lax --nbval-current-env \
	    --nbval-cell-timeout=3600 -p no:cacheprovider -n $(JOBS) --dist loadfile $(PYTEST_ARGS)
	@$(MAKE) --no-print-directory check-browser-if-present

# the book, its HTML check, and the browser check where Chromium is installed (of the
# pages written since they last passed it, so that a prose edit rebuilds in seconds)
book: export
	$(BIN)/python tools/bookcache.py --jobs $(JOBS)
	$(BIN)/jupyter-book build . --warningiserror --keep-going
	$(BIN)/python tools/check_html.py _build/html
	@$(MAKE) --no-print-directory check-browser-if-present BROWSER_ARGS=--changed-only

check-html: $(STAMP)
	$(BIN)/python tools/check_html.py _build/html

$(BROWSER_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[browser]"
	touch $(BROWSER_STAMP)

# Playwright, where Chromium is installed; a message, where it is not
browser-deps: $(STAMP)
	@if [ -x $(CHROMIUM) ]; then $(MAKE) --no-print-directory $(BROWSER_STAMP); \
	else echo "browser checks skipped: $(CHROMIUM) not found (apt-get install -y chromium)"; fi

check-browser: $(STAMP)
	@test -x $(CHROMIUM) || { echo "make check-browser needs Chromium: apt-get install -y chromium"; exit 2; }
	@$(MAKE) --no-print-directory $(BROWSER_STAMP)
	$(BIN)/python tools/check_browser.py _build/html --chromium $(CHROMIUM) \
	    $(foreach w,$(BROWSER_WIDTHS),--width $(w))

# the same, skipped with the reason where Chromium or the built book is missing
check-browser-if-present: browser-deps
	$(BIN)/python tools/check_browser.py _build/html --chromium $(CHROMIUM) \
	    $(foreach w,$(BROWSER_WIDTHS),--width $(w)) --skip-if-unavailable $(BROWSER_ARGS)

# JupyterLab with the project's settings (.jupyter/lab/settings/overrides.json: chapters,
# which are MyST-Markdown notebooks, open as notebooks through jupytext on a double click;
# jupyterlab-myst renders their Markdown cells)
lab: $(STAMP)
	$(BIN)/jupyter lab --LabApp.app_settings_dir=$(CURDIR)/.jupyter/lab/settings \
	    $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

benchmark: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf _build
