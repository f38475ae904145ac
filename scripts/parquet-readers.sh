#!/usr/bin/env bash
# Installs the two independent Parquet readers the internal/parquet tests
# check every written file with (pyarrow and DuckDB) into a venv under .bin/.
# Idempotent: an existing venv with both packages at the pinned versions is
# kept. Needs only python3 with the venv module (Debian: python3-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.bin/pyenv-parquet
PYARROW_VERSION=${PYARROW_VERSION:-26.0.1}
DUCKDB_VERSION=${DUCKDB_VERSION:-1.5.6}
# DuckDB needs pytz to hand TIMESTAMP WITH TIME ZONE values to Python.
PYTZ_VERSION=${PYTZ_VERSION:-2026.6}
PY=${PYTHON:-python3}

have() {
	[ -x "$VENV/bin/python" ] && "$VENV/bin/python" - "$PYARROW_VERSION" "$DUCKDB_VERSION" <<'PYEOF' 2>/dev/null
import sys, pyarrow, duckdb, pytz
sys.exit(0 if (pyarrow.__version__, duckdb.__version__) == (sys.argv[1], sys.argv[2]) else 1)
PYEOF
}

if have; then
	exit 0
fi
echo "installing pyarrow $PYARROW_VERSION, duckdb $DUCKDB_VERSION and pytz into $VENV"
mkdir -p .bin
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check \
	"pyarrow==$PYARROW_VERSION" "duckdb==$DUCKDB_VERSION" "pytz==$PYTZ_VERSION"
have || { echo "parquet readers: install into $VENV did not take" >&2; exit 1; }
