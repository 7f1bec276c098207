# The README's two commands: `make run` and `make test`. Both bootstrap .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# TensorFlow build: cpu (default) or gpu (CUDA). Never both in one environment.
TF     ?= cpu
# The demo project lives in the user's data folder ($XDG_DATA_HOME/guiapp/demo, or
# $GUIAPP_DATA_DIR/demo), never in the checkout; the first start fills it in the background.
DEMO   := --demo

export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: run test test-slow venv lint clean

# Re-install whenever pyproject.toml changes (or the TF build is switched).
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[$(TF),dev]"
	@touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	@if [ -z "$$DISPLAY$$WAYLAND_DISPLAY$$QT_QPA_PLATFORM" ]; then \
	  echo "guiapp: no display (DISPLAY is unset): use 'xvfb-run make run', 'QT_QPA_PLATFORM=offscreen $(BIN)/guiapp --smoke shot.png $(DEMO)', or the headless CLI '$(BIN)/guiapp --help' (info, check, ...)"; \
	  exit 0; \
	fi; \
	exec $(BIN)/guiapp $(DEMO)

lint: $(STAMP)
	$(BIN)/ruff check guiapp tests
	$(BIN)/ruff format --check guiapp tests
	$(BIN)/mypy

# The GUI tests run in a process of their own: they check that the GUI never imports
# TensorFlow, which the core tests (training, pipeline) import in theirs.
test: lint
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest --ignore=tests/ui
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest tests/ui

# The full fault sweeps (every kill point, every fault), too long for CI: tests marked `slow`.
test-slow: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -m slow

# A new user's walk through the real window (Xvfb + xdotool: apt-get install -y xvfb xauth
# xdotool libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1), one screenshot per step in WALK_OUT.
# Not part of `make test` (a few minutes); tests/walk/walk.py says what it does.
WALK_OUT ?= walk-screens
.PHONY: walk
walk: $(STAMP)
	$(BIN)/python tests/walk/walk.py $(WALK_OUT)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache

# --- packaging (packaging/README.md). Not part of `make test`.
# `make package`      builds dist/guiapp/ (PyInstaller one-folder), dist/guiapp-VERSION-linux-x86_64.tar.gz
#                     and dist/guiapp_VERSION_amd64.deb, in its own virtualenv PKG_VENV (never .venv).
# `make package-test` installs that .deb (dpkg -i, as root), runs it as a non-root user, uninstalls it.
PKG_VENV  ?= build/pkgvenv
PKG_BIN   := $(PKG_VENV)/bin
PKG_STAMP := $(PKG_VENV)/.installed

.PHONY: package package-test

$(PKG_STAMP): packaging/requirements-freeze.txt pyproject.toml
	@test -x $(PKG_BIN)/python || $(PYTHON) -m venv $(PKG_VENV)
	$(PKG_BIN)/python -m pip install -q --upgrade pip
	$(PKG_BIN)/python -m pip install -q -r packaging/requirements-freeze.txt
	$(PKG_BIN)/python -m pip install -q --no-deps -e .
	@touch $(PKG_STAMP)

package: $(PKG_STAMP)
	@start=$$(date +%s); \
	rm -rf dist/guiapp build/pyinstaller; \
	$(PKG_BIN)/pyinstaller --noconfirm --clean --log-level WARN \
	  --distpath dist --workpath build/pyinstaller packaging/guiapp.spec || exit 1; \
	echo "package: PyInstaller bundle dist/guiapp ($$(du -sh dist/guiapp | cut -f1)) in $$(( $$(date +%s) - start )) s"; \
	bash packaging/build_deb.sh || exit 1; \
	echo "package: done in $$(( $$(date +%s) - start )) s"; ls -l dist

package-test:
	@test -n "$$(ls dist/guiapp_*_amd64.deb 2>/dev/null)" || { echo "package-test: no dist/guiapp_*_amd64.deb; run 'make package' first"; exit 2; }
	bash packaging/test_install.sh
