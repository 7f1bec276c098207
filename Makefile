# The README's two commands: `make run` and `make test`. Both bootstrap .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# TensorFlow build: cpu (default) or gpu (CUDA). Never both in one environment.
TF     ?= cpu
DEMO   := resources/demo/demo.gproj

export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: run test venv lint clean

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

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
