# The README's two commands: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: run test check bench install migrate sandbox

$(VENV)/installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/installed sandbox

# bubblewrap, the sandbox people's processes run in, where this user may install it (root with
# apt); elsewhere the server starts with the sandbox off and says so.
sandbox:
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; } \
		|| echo "ahpd: bubblewrap is not installed (apt-get install bubblewrap): the sandbox is off"

migrate: install
	$(PY) manage.py migrate --verbosity 0
	$(PY) manage.py collectstatic --noinput --verbosity 0

# The steps to the first admin person, said while there is none.
run: migrate
	@$(PY) manage.py first_admin
	$(PY) manage.py serve

test: migrate
	$(PY) -m pytest -q

check: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

bench: install
	$(PY) bench/fanout.py
	$(PY) bench/turn.py
	$(PY) bench/telemetry.py
	$(PY) bench/catalogue.py
	$(PY) bench/frame_cache.py
	$(PY) bench/usage.py
	$(PY) bench/sandbox.py
	if [ -n "$$DATABASE_URL" ] && [ -n "$$REDIS_URL" ]; then $(PY) bench/nodes.py; fi
