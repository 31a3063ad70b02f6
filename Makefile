# The two commands: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
TESTVENV := .venv-test

.PHONY: demo tour test test-portable lint bench clean test-compiler-versions

$(VENV)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -e '.[examples]'
	touch $@

$(TESTVENV)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(TESTVENV)
	$(TESTVENV)/bin/pip install -q -e '.[test,mpi]'
	touch $@

# The main job: a character-level GPT learns on the standard library's documentation text
# (about two minutes on the CPU). `make tour` shows the mechanisms instead.
demo: $(VENV)/.stamp
	$(VENV)/bin/python -m ember.examples.charlm

tour: $(VENV)/.stamp
	$(VENV)/bin/python -m ember.demo
	$(VENV)/bin/python -m ember.compiler.lower

lint: $(TESTVENV)/.stamp
	$(TESTVENV)/bin/ruff check .
	$(TESTVENV)/bin/lint-imports

# tests/compiler also runs on every other supported CPython (venvs with the runtime deps only)
PYENV_VERSIONS ?= $(HOME)/.pyenv/versions
OTHER_PYTHONS := 3.12 3.13

.venv-py%/.stamp: pyproject.toml
	@v=$$(echo $* | sed 's/^3/3./'); py=$$(ls -d $(PYENV_VERSIONS)/$$v.* 2>/dev/null | tail -n 1); \
	if [ -z "$$py" ]; then echo "SKIPPED: Python $$v is not installed"; \
	else $$py/bin/python -m venv .venv-py$* && \
	.venv-py$*/bin/pip install -q numpy ml_dtypes pytest hypothesis && touch $@; fi

test-compiler-versions:
	@for v in $(OTHER_PYTHONS); do \
	  d=.venv-py$$(echo $$v | tr -d .); \
	  $(MAKE) --no-print-directory $$d/.stamp; \
	  if [ -x $$d/bin/python ]; then echo "tests/compiler on Python $$v"; \
	    $$d/bin/python -m pytest -q -p no:cacheprovider tests/compiler || exit 1; \
	  else echo "SKIPPED: tests/compiler on Python $$v (interpreter not installed)"; fi; \
	done

test: lint test-compiler-versions
	$(TESTVENV)/bin/python -m pytest -n 2 --doctest-modules ember tests

# The suite as an older CPU would run it: OpenBLAS's and MKL's AVX2 kernels, NumPy and torch
# without AVX-512 (rounding differs by BLAS kernel and SIMD width; tests must hold on every CPU).
test-portable: lint
	OPENBLAS_CORETYPE=Haswell MKL_ENABLE_INSTRUCTIONS=AVX2 \
	NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR" \
	ATEN_CPU_CAPABILITY=avx2 $(TESTVENV)/bin/python -m pytest -n 2 --doctest-modules ember tests

bench: $(TESTVENV)/.stamp
	$(TESTVENV)/bin/python bench/overhead.py
	$(TESTVENV)/bin/python bench/kernels.py
	$(TESTVENV)/bin/python bench/train.py

clean:
	rm -rf $(VENV) $(TESTVENV) .venv-py3* build *.egg-info
