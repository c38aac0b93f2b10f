# The two commands of the README: `make book` and `make test`. Both create the virtual
# environment on first use (nothing needs installing by hand) and reuse it afterwards.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.scansnap-installed
NOTEBOOKS := $(shell find book -name '*.ipynb' -not -path '*/.ipynb_checkpoints/*' 2>/dev/null)

ASSETS := _assets/.installed

# torch's OpenMP threads sleep instead of spinning while they wait: the same numbers, and on a
# machine whose two cores are shared (a second job, a browser) a step is not 10-40x slower
# (bench/RESULTS.md). Set before any Python starts, so the chapters' kernels inherit it.
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: all install assets book url-note test bench mutants clean tex pdf
all: book

$(STAMP): requirements.txt requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first, pinned: the CPU wheel on the project's machines (never an unpinned torch)
	$(BIN)/python -m pip install --disable-pip-version-check -q torch==2.13.0
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements.txt -c requirements.lock
	$(BIN)/python -m pip install --disable-pip-version-check -q --no-deps -e .
	touch $@

install: $(STAMP)

# Offline copies of MathJax 3 and the widget manager, from the npm registry (web/package-lock.json),
# so the built pages typeset math and render widgets from file:// with no network.
# Not named _static: jupyter-book adds a <script> for every .js under _static to every page.
$(ASSETS): web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund --loglevel=error
	rm -rf _assets && mkdir -p _assets/jupyter-widgets
	cp -r web/node_modules/mathjax/es5 _assets/mathjax
	cp web/node_modules/@jupyter-widgets/html-manager/dist/embed.js web/node_modules/@jupyter-widgets/html-manager/dist/embed.js.LICENSE.txt _assets/jupyter-widgets/
	cd web/node_modules/@jupyter-widgets/html-manager/dist && cp *.woff *.woff2 *.ttf *.eot *.svg ../../../../../_assets/jupyter-widgets/
	touch $@

assets: $(ASSETS)

# The browser test drives Debian's chromium (Playwright's own browser download does not work here).
CHROMIUM ?= /usr/bin/chromium
$(CHROMIUM):
	apt-get install -y -q chromium >/dev/null || (apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null)

# The printed edition needs XeLaTeX, the TeX Gyre fonts and poppler's tools, from Debian (as root; ~150 MB
# to download, ~450 MB on disk, without the 509 MB texlive-fonts-extra: _ext/latex/bbm.sty stands in).
TEX_PACKAGES := texlive-xetex texlive-latex-extra texlive-latex-recommended texlive-pictures \
	texlive-fonts-recommended texlive-plain-generic latexmk fonts-texgyre fonts-texgyre-math \
	fonts-dejavu-core poppler-utils
tex:
	@dpkg -s $(TEX_PACKAGES) >/dev/null 2>&1 || { \
	  apt-get install -y -q --no-install-recommends $(TEX_PACKAGES) >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $(TEX_PACKAGES) >/dev/null; }; }

# The PDF edition, from the chapters' committed outputs (no execution): _build/latex/book.pdf, then its checks.
pdf: $(STAMP) $(ASSETS) tex
	@$(MAKE) -s --no-print-directory url-note
	$(BIN)/python tools/build_pdf.py
	$(BIN)/python tools/pdf_check.py
	@echo "The printed edition is at $(CURDIR)/_build/latex/book.pdf"

# The repository URL in _config.yml (launch buttons, the chapters' install cell) is a placeholder
# until the project has its public home: every `make book` says so, loudly, while it is
# (tests/test_repository_url.py keeps this note and the README's in step with _config.yml).
PLACEHOLDER_URL := https://github.com/scansnap/scansnap
url-note:
	@if grep -Eq '^  url: $(PLACEHOLDER_URL) *$$' _config.yml; then \
	  echo ""; \
	  echo "!!! NOTE: repository.url in _config.yml is still the placeholder $(PLACEHOLDER_URL)."; \
	  echo "!!! The Colab/Binder buttons and every chapter's install cell point there. Set the real"; \
	  echo "!!! URL in _config.yml and the install cells before publishing (see README, 'Repository URL')."; \
	  echo ""; \
	fi

book: $(STAMP) $(ASSETS)
	@$(MAKE) -s --no-print-directory url-note
	$(BIN)/jupyter-book build . -n -W --keep-going
	@echo "The book is at file://$(CURDIR)/_build/html/index.html"
	@$(MAKE) -s --no-print-directory url-note

# tests/ includes the browser test (builds the book, reads every page in headless chromium) and
# the fresh-environment test (every module the chapters import, in a new environment).
# Strict nbval runs beside them (NBVAL_BESIDE=1, the default): the two are independent (nbval only
# reads the notebooks; the browser test builds from the committed outputs), and neither keeps two
# cores busy alone (a chapter's kernel is mostly one Python thread, Chromium waits on layout), so
# together they take minutes less than one after the other (bench/RESULTS.md). nbval's report is
# printed after the tests'; either failing fails `make test`. NBVAL_BESIDE=0: one after the other.
NBVAL_BESIDE ?= 1
NBVAL := $(BIN)/python -m pytest --nbval --nbval-sanitize-with tests/sanitize.cfg -p no:cacheprovider --durations=15 $(NOTEBOOKS)
test: $(STAMP) $(ASSETS) $(CHROMIUM) tex
ifeq ($(strip $(NOTEBOOKS)),)
	SCANSNAP_REQUIRE_TEX=1 SCANSNAP_CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest tests --durations=25
else ifeq ($(NBVAL_BESIDE),1)
	@log=$$(mktemp); start=$$(date +%s); \
	echo "strict nbval runs beside the tests; its report follows theirs: $(NBVAL)"; \
	( $(NBVAL) > $$log 2>&1; echo $$? > $$log.rc; echo "nbval took $$(( $$(date +%s) - start )) s" >> $$log ) & \
	SCANSNAP_REQUIRE_TEX=1 SCANSNAP_CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest tests --durations=25; rc=$$?; \
	echo "tests took $$(( $$(date +%s) - start )) s (exit $$rc); waiting for strict nbval"; wait; \
	echo "=================== strict nbval (ran beside the tests) ==================="; \
	cat $$log; nb=$$(cat $$log.rc); rm -f $$log $$log.rc; \
	echo "make test: tests exit $$rc, nbval exit $$nb, $$(( $$(date +%s) - start )) s in all"; \
	test $$rc -eq 0 && test $$nb -eq 0
else
	SCANSNAP_REQUIRE_TEX=1 SCANSNAP_CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest tests --durations=25
	$(NBVAL)
endif

# Benchmarks (not part of `make test`): each writes its Markdown report beside bench/RESULTS.md,
# which quotes them. On a shared machine, OMP_WAIT_POLICY=PASSIVE keeps torch's two threads from
# spinning against the other jobs (see bench/RESULTS.md); it is the caller's to set.
bench: $(STAMP)
	$(BIN)/python bench/bench_fig6.py --profile --write bench/fig6.md
	$(BIN)/python bench/bench_lm.py --write bench/lm.md

# Mutation testing (not part of `make test`; long: see bench/MUTATION.md). mutmut mutates every module
# of the package ([tool.mutmut] in pyproject.toml) and runs the fast unit tests against each mutant,
# one torch thread per test process, at the lowest CPU priority. MUTANTS='scansnap.lm.*' limits the
# run to one module (mutmut name globs) and keeps the results of earlier runs (mutmut re-runs only
# the mutants of functions changed since); without it the run starts from nothing. MUTANT_JOBS sets
# the parallel test processes. Prints the score of each module and every survivor.
MUTANTS ?=
MUTANT_JOBS ?= 2
mutants: $(STAMP)
	$(if $(strip $(MUTANTS)),,rm -rf mutants)
	@# mutmut refreshes a kept mutants/ folder's .py files only: copy the package data (the shipped
	@# results' records, the panels' JS) too, or the tests read stale records and the run stops
	@if [ -d mutants/scansnap ]; then cd scansnap && find . -type f ! -name '*.py' ! -name '*.pyc' \
	  -exec cp --parents {} ../mutants/scansnap/ \; ; fi
	SCANSNAP_TEST_THREADS=1 OMP_NUM_THREADS=1 nice -n 19 $(BIN)/mutmut run --max-children $(MUTANT_JOBS) $(MUTANTS)
	@$(BIN)/python tools/mutation_score.py
	$(BIN)/mutmut results | grep -v ': not checked$$' || true

clean:
	rm -rf _build _assets
