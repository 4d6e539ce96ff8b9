# `make book`: render the book (the last line printed says where: _build/html/index.html).
# `make test`: the test suite, with a headless browser.
# SCALE (ci | book | paper) and DEVICE (auto | cpu | cuda) choose how `make book` executes the chapters, JOBS how
# many at once (default: one per core, plus one on a machine with fewer cores than half the chapters).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SCALE ?= book
DEVICE ?= auto
JOBS ?=
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: venv book test

venv: $(VENV)/.installed

# Reinstalled when pyproject.toml or constraints.txt changes. pip only: it is what sees the local CPU torch wheel.
# constraints.txt pins the exact tested set; the package itself only declares ranges.
$(VENV)/.installed: pyproject.toml constraints.txt
	[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -c constraints.txt -e ".[book,test]"
	touch $@

book: venv
	$(PY) -m compendium build --scale $(SCALE) --device $(DEVICE) $(if $(JOBS),--jobs $(JOBS))

test: venv
	@if [ ! -x /usr/bin/chromedriver ]; then \
		echo "Installing Debian's chromium and chromium-driver for the browser tests"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver; \
	fi
	COMPENDIUM_REQUIRE_BROWSER=1 $(PY) -m pytest
