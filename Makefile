# The two commands of the README: `make book` and `make test`. Both create the virtual
# environment on first use (nothing needs installing by hand) and reuse it afterwards.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.scansnap-installed
NOTEBOOKS := $(shell find book -name '*.ipynb' -not -path '*/.ipynb_checkpoints/*' 2>/dev/null)

.PHONY: all install book test bench clean
all: book

$(STAMP): requirements.txt requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first, pinned: the CPU wheel on the project's machines (never an unpinned torch)
	$(BIN)/python -m pip install --disable-pip-version-check -q torch==2.13.0
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements.txt -c requirements.lock
	$(BIN)/python -m pip install --disable-pip-version-check -q --no-deps -e .
	touch $@

install: $(STAMP)

book: $(STAMP)
	$(BIN)/jupyter-book build . -n -W --keep-going
	@echo "The book is at file://$(CURDIR)/_build/html/index.html"

test: $(STAMP)
	$(BIN)/python -m pytest tests
ifneq ($(strip $(NOTEBOOKS)),)
	$(BIN)/python -m pytest --nbval --sanitize-with tests/sanitize.cfg -p no:cacheprovider $(NOTEBOOKS)
endif

bench: $(STAMP)
	$(BIN)/python bench/bench_fig6.py --write bench/RESULTS.md

clean:
	rm -rf _build
