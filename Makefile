# p4aqm — see README.md and docs/. Every target runs from a fresh clone.
PYTHON ?= /usr/bin/python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
BUILD  ?= build
SITE   ?= site
P4SRC  := $(shell find p4src -name '*.p4')

# The interpreter's Debian package where it is Debian's (/usr/bin/python3.11 on Ubuntu
# 22.04, whose python3 is older); any other interpreter is the user's own.
PYTHON_PKG := $(if $(filter /usr/bin/python3%,$(PYTHON)),$(notdir $(PYTHON)),python3)
# Python 3.11+: the pinned numpy and scipy need it. Checked before apt when the
# interpreter exists, and after, when apt installed it.
PYTHON_OK = $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
  echo "p4aqm needs Python 3.11+; $(PYTHON) is $$($(PYTHON) --version 2>&1). On Ubuntu 22.04: make setup PYTHON=/usr/bin/python3.11 (installs python3.11 from Ubuntu's packages)" >&2; exit 1; }

# Debian packages the project needs at run time (the P4 toolchain is separate: docs/install.md);
# g++ brings the C++ standard library headers cppyy compiles the ns-3 test driver with.
APT_PACKAGES := $(PYTHON_PKG) $(PYTHON_PKG)-venv $(PYTHON_PKG)-dev python3-thrift iproute2 ethtool iputils-ping mininet iperf3 tcpdump tcpreplay valgrind g++

# P4LANG=1 (see setup) fetches p4lang's repository key with curl and gpg.
ifneq ($(filter-out 0 1,$(P4LANG)),)
$(error P4LANG=$(P4LANG): use P4LANG=1 to install p4c and BMv2 from p4lang's packages, or leave it unset)
endif
ifeq ($(P4LANG),1)
APT_PACKAGES += ca-certificates curl gnupg
endif
# P4=source (see setup) builds p4c, BMv2 and PI from p4lang's sources.
ifneq ($(filter-out source,$(P4)),)
$(error P4=$(P4): use P4=source to build p4c, BMv2 and PI from p4lang's sources, or leave it unset)
endif
ifeq ($(P4)$(P4LANG),source1)
$(error P4=source and P4LANG=1: choose one way to install p4c and BMv2)
endif

# CONSTANTS (see build) fixes the parameters of a profile of one algorithm.
ifneq ($(CONSTANTS),)
ifeq ($(ALGORITHMS),)
$(error CONSTANTS=$(CONSTANTS) needs ALGORITHMS naming its one algorithm, e.g. ALGORITHMS=codel+lean)
endif
endif

EXPERIMENTS := smoke e1 e2 e3 e4 e5 e6 e7 e8 e9
.PHONY: setup build test run bench docs docs-serve clean $(EXPERIMENTS) transport

## setup: install Debian packages and the Python environment, then build the P4 program;
##        P4LANG=1 also installs p4c and BMv2, before the build, from p4lang's packages where
##        p4lang publishes them (tooling/p4lang_packages.py); P4=source builds p4c, BMv2 and
##        PI from p4lang's repositories at pinned versions into .toolchain/ (or
##        $P4AQM_TOOLCHAIN; tooling/source_build.py, about 1-2 hours on 2 cores; a second
##        run does nothing); without either only apt's usual sources and PyPI are contacted
setup:
	@if command -v "$(PYTHON)" > /dev/null; then $(PYTHON_OK); fi
	@if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(APT_PACKAGES); \
	else \
	  sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(APT_PACKAGES); \
	fi
	@$(PYTHON_OK)
	$(PYTHON) -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,sweep,docs]'
ifeq ($(P4LANG),1)
	$(PY) -m tooling.p4lang_packages
endif
ifeq ($(P4),source)
	$(PY) -m tooling.source_build
endif
	@if $(PY) -c 'import sys; from tooling import toolchain; sys.exit(toolchain.find("p4c") is None)'; then \
	  $(MAKE) --no-print-directory build; \
	else \
	  echo "p4c not found: skipping 'make build' (see docs/install.md, 'Installing p4c and BMv2')"; \
	fi

## build: compile p4src/ into $(BUILD)/ (BMv2 JSON, P4Info text and binary); ALGORITHMS=red,mecn
##        builds the profile with only those algorithms into $(BUILD)/profiles/red-mecn/;
##        CONSTANTS=aqm.toml with ALGORITHMS=codel builds it for that file's configuration,
##        its parameters constants (into $(BUILD)/profiles/codel+constants/)
##        (docs/dataplane/profiles.md)
ifeq ($(ALGORITHMS),)
build: $(BUILD)/p4aqm.json
else
build:
	$(PY) -m tooling.build --out $(BUILD) --algorithms $(ALGORITHMS) $(if $(CONSTANTS),--constants $(CONSTANTS))
endif

$(BUILD)/p4aqm.json: $(P4SRC) tooling/build.py tooling/generate.py control_plane/profiles.py $(wildcard control_plane/algorithms/*.py)
	$(PY) -m tooling.build --out $(BUILD)

## test: unit tests always; P4 tests when the toolchain is present (skips say why)
test:
	$(PY) -m pytest -v -ra --durations=20

## run: the demo — DropTail, RED, RED+ECN, MECN, AMECN on one dumbbell (~5 min, root)
run: build
	$(PY) -m experiments run demo

## smoke: the whole path in about a minute; e1 ... e7: the seed papers' experiments (SPEC E1-E7), e8: CoDel and PIE beside them, e9: classic and L4S flows under DualPI2; results in results/<name>/
##        BACKEND=ns3: the same in the ns-3 twin, at the paper's scale (no root, no P4 toolchain;
##        docs/experiments/twin.md)
## transport: the userspace MECN transport's Reno against Linux's (issue 6)
ifneq ($(filter-out bmv2 ns3,$(BACKEND)),)
$(error BACKEND=$(BACKEND): bmv2 (the switch, the default) or ns3 (its ns-3 twin))
endif
$(EXPERIMENTS) transport: $(if $(filter ns3,$(BACKEND)),,build)
	$(PY) -m experiments run $@ $(if $(BACKEND),--backend $(BACKEND))

## bench: data-plane and control-plane benchmarks -> results/bench/*.json (~25 min, root);
## BENCH="--compare REV --instructions-only": this tree's instruction counts against REV's p4src;
## BENCH=--control-only: only the control plane (P4Runtime, loops, telemetry, aqmctl's latency)
bench:
	$(PY) -m benchmarks $(BENCH)

## docs: the documentation site (Sphinx, docs/) into $(SITE)/, strict: any warning fails
docs:
	$(PY) -m sphinx -W --keep-going -n -q -b html docs $(SITE)

## docs-serve: the same at http://127.0.0.1:8000, rebuilt as pages change
docs-serve:
	$(PY) -m sphinx_autobuild -W --keep-going -n -b html docs $(SITE)

clean:
	rm -rf $(BUILD) $(SITE)
