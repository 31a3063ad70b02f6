# The two commands: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
TESTVENV := .venv-test

.PHONY: demo test lint bench clean

$(VENV)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -e .
	touch $@

$(TESTVENV)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(TESTVENV)
	$(TESTVENV)/bin/pip install -q -e '.[test]'
	touch $@

demo: $(VENV)/.stamp
	$(VENV)/bin/python -m ember.demo

lint: $(TESTVENV)/.stamp
	$(TESTVENV)/bin/ruff check .
	$(TESTVENV)/bin/lint-imports

test: lint
	$(TESTVENV)/bin/python -m pytest -n 2 tests

bench: $(TESTVENV)/.stamp
	$(TESTVENV)/bin/python bench/overhead.py
	$(TESTVENV)/bin/python bench/kernels.py

clean:
	rm -rf $(VENV) $(TESTVENV) build *.egg-info
