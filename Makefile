# Two set-up commands on a fresh machine (see README):
#   make demo   - the main job: local Chatto server + real Hermes gateway + scripted model
#   make test   - the whole test suite
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: venv test demo bench proto clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider

demo: $(STAMP)
	$(PY) -m hermes_chatto.testing.demo

bench: $(STAMP)
	$(PY) bench/run_all.py

# Regenerate the protobuf module from the hand-written subset .proto.
proto: $(STAMP)
	$(PY) -m grpc_tools.protoc -I hermes_chatto/wire/proto --python_out=hermes_chatto/wire/proto hermes_chatto/wire/proto/chatto.proto

clean:
	rm -rf $(VENV) build *.egg-info
