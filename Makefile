# kubectl-fluid — developer entry points. `make help` lists them.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
STATE ?= .dev

.PHONY: help prereqs venv csi-stubs bins up down status demo test unit e2e lint crds bench krew clean

help:
	@echo "make demo    start a local cluster with a real node, deploy the product, walk through both data paths"
	@echo "make up      start the local cluster (.dev/kubeconfig): kwok nodes, one real node, the product as local processes"
	@echo "make down    stop everything 'make up' started and remove its state"
	@echo "make test    lint + unit + e2e (own private cluster, or the one KUBECONFIG names)"
	@echo "make bench   figures and ratios, printed side by side (SCALE=1: 2,000 datasets; PAIRS=N; ONLY=controller)"
	@echo "make lint    ruff + mypy + CRDs in step with the models"
	@echo "make crds    regenerate manifests/crds from kubectl_fluid/api"
	@echo "make krew    the plugin's krew archive in dist/, and plugins/fluid.yaml naming its sha256"

# Debian packages, Python, Go, root and /dev/fuse, checked (or installed, as root) in a second before
# anything is built: a missing one is one line now, not a failure twenty minutes in.
prereqs:
	@bash hack/prereqs.sh

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,mooncake]'
	@touch $@

# The gRPC stubs are generated from csi/proto/*.proto (never committed), again after every install so
# they match the installed grpcio-tools and protobuf.
CSI_STUBS := csi/proto/csi_pb2.py
$(CSI_STUBS): csi/proto/csi.proto csi/proto/pluginregistration.proto csi/proto/generate.py $(STAMP)
	$(BIN)/python csi/proto/generate.py --require-types

csi-stubs: $(STAMP)
	$(BIN)/python csi/proto/generate.py --require-types

venv: $(STAMP) $(CSI_STUBS)

# What the tests run: Go-built kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd,
# kwok, csi-sanity, csi-provisioner, helm and krew, cached by version under
# $${KUBECTL_FLUID_CACHE:-~/.cache/kubectl-fluid}; only the packaging tools (helm, krew) when KUBECONFIG
# names an existing cluster (kind, or any other). Then the real Curvine's binaries, unpacked beside them
# from ../shared/peers/curvine ($$CURVINE_PEER_DIR) when that is there. `make up` and `make demo` build
# only what they run themselves (hack/build-bins.sh's modes), so they do not depend on this.
bins:
	@if [ -z "$$KUBECONFIG" ]; then bash hack/build-bins.sh >/dev/null; else bash hack/build-bins.sh tools; fi
	@PYTHONPATH=hack $(PYTHON) -m localcluster.peers.curvinebins >/dev/null || echo "warning: no real Curvine: the tests of the FUSE path that need it fail under CI=true, and skip otherwise" >&2

up: prereqs venv
	PYTHONPATH=hack $(BIN)/python -m localcluster up --fluid --state-dir $(STATE)
	@echo "export KUBECONFIG=$(abspath $(STATE))/kubeconfig"

# The README's first command: everything it needs (venv, the control plane without kwok or the test
# tools, a real node with the product's, Curvine's and Mooncake's images), then the narrated
# walkthrough, which deploys the product with its manifests. The cluster and the demo's objects stay
# up afterwards; the next `make demo` starts them afresh, `make down` stops everything.
demo: prereqs venv
	PYTHONPATH=hack $(BIN)/python -m localcluster.userscluster --mooncake --state-dir $(STATE)
	PYTHONPATH=hack $(BIN)/python hack/demo/walkthrough.py --state-dir $(STATE)

# Standard library only: works even when the venv is gone.
down:
	PYTHONPATH=hack $(PYTHON) -m localcluster down --state-dir $(STATE)

status:
	PYTHONPATH=hack $(PYTHON) -m localcluster status --state-dir $(STATE)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m kubectl_fluid.api.crdgen --check
	$(BIN)/python -m kubectl_fluid.cli.entry --check

# Regenerate manifests/crds from the models in kubectl_fluid/api.
crds: venv
	$(BIN)/python -m kubectl_fluid.api.crdgen

# pytest exits 5 when it collected no test: that is a broken suite, never a pass.
define run_pytest
	@set +e; $(BIN)/python -m pytest $(1); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests ($(1))" >&2; exit 1; fi; exit $$rc
endef

unit: venv
	$(call run_pytest,tests/unit)

e2e: prereqs venv bins
	$(call run_pytest,-m e2e tests/e2e)

test: prereqs venv bins lint
	$(call run_pytest,tests)

bench: prereqs venv bins
	$(BIN)/python -m tests.bench $(if $(SCALE),--scale) $(if $(PAIRS),--pairs $(PAIRS)) $(foreach b,$(ONLY),--only $(b))

# A release of the plugin for krew: the archive (reproducible: the same tree, the same sha256) and the
# manifest that describes it. Upload the archive where plugins/fluid.yaml's uri points.
krew: venv
	$(BIN)/python hack/krew.py archive --out dist
	$(BIN)/python hack/krew.py manifest --write --archive dist/kubectl-fluid_v$$($(BIN)/python -c 'import kubectl_fluid; print(kubectl_fluid.__version__)').tar.gz

clean: down
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
	rm -f csi/proto/*_pb2*.py csi/proto/*_pb2*.pyi
