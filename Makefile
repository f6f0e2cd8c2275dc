# Two entry points a newcomer needs: `make demo` and `make test`. Everything else is a step of those.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test lint crds lock clean

$(STAMP): pyproject.toml constraints.txt layers/dependencies/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/autoscaler validate events/manifests/
	$(BIN)/autoscaler get events/manifests/

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

test: lint
	$(BIN)/pytest -q

# Regenerate the committed CRDs after a model change (a test fails while they differ).
crds: $(STAMP)
	$(BIN)/autoscaler crds --out infra/manifests/crds/

# Re-resolve the dev environment from pyproject.toml and pin every package in constraints.txt.
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet --disable-pip-version-check -e '.[dev]'
	{ echo "# Exact versions of every Python package the dev environment installs (a lock file)."; \
	  echo "# Regenerate after changing a dependency with: make lock"; \
	  .lock-venv/bin/pip freeze --exclude-editable; } > constraints.txt
	rm -rf .lock-venv

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
