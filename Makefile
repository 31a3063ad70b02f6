# The two commands: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
TESTVENV := .venv-test

.PHONY: demo tour test lint bench clean

$(VENV)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -e '.[examples]'
	touch $@

$(TESTVENV)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(TESTVENV)
	$(TESTVENV)/bin/pip install -q -e '.[test]'
	touch $@

# The main job: a character-level GPT learns on the standard library's documentation text
# (about two minutes on the CPU). `make tour` shows the mechanisms instead.
demo: $(VENV)/.stamp
	$(VENV)/bin/python -m ember.examples.charlm

tour: $(VENV)/.stamp
	$(VENV)/bin/python -m ember.demo

lint: $(TESTVENV)/.stamp
	$(TESTVENV)/bin/ruff check .
	$(TESTVENV)/bin/lint-imports

test: lint
	$(TESTVENV)/bin/python -m pytest -n 2 tests

bench: $(TESTVENV)/.stamp
	$(TESTVENV)/bin/python bench/overhead.py
	$(TESTVENV)/bin/python bench/kernels.py
	$(TESTVENV)/bin/python bench/train.py

clean:
	rm -rf $(VENV) $(TESTVENV) build *.egg-info
