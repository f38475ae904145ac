#!/usr/bin/env bash
# Installs what the Iceberg tests need into .bin/ (idempotent):
#  - .bin/iceberg-rest/: Apache Iceberg's REST catalog test fixture (the jar
#    the apache/iceberg-rest-fixture image runs, from Maven), and our
#    launcher that binds it to 127.0.0.1 (the fixture's own main binds every
#    interface);
#  - .bin/pyiceberg/: pyiceberg, the independent reader of the tables.
# Needs java (17+), javac, mvn and python3 with venv; as root on Debian it
# installs the JDK and Maven from the distribution when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v javac >/dev/null || ! command -v mvn >/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "installing a JDK and Maven (Debian packages) for the Iceberg REST catalog fixture"
		apt-get install -y -q --no-install-recommends default-jdk-headless maven >/tmp/iceberg-tools-apt.log 2>&1 ||
			{ apt-get update -q >>/tmp/iceberg-tools-apt.log 2>&1 || true
			  apt-get install -y -q --no-install-recommends default-jdk-headless maven >>/tmp/iceberg-tools-apt.log 2>&1; } ||
			{ echo "iceberg-tools: apt-get install default-jdk-headless maven failed: $(tail -n 1 /tmp/iceberg-tools-apt.log)" >&2; exit 1; }
	else
		echo "iceberg-tools: javac and mvn are needed (Debian: apt-get install default-jdk-headless maven)" >&2
		exit 1
	fi
fi
ICEBERG_VERSION=${ICEBERG_VERSION:-1.10.1}
PYICEBERG_VERSION=${PYICEBERG_VERSION:-0.12.0}
PYARROW_VERSION=${PYARROW_VERSION:-26.0.1}
REST=.bin/iceberg-rest
JAR=$REST/iceberg-open-api-$ICEBERG_VERSION.jar
mkdir -p "$REST"
if [ ! -s "$JAR" ]; then
	echo "downloading the Iceberg REST catalog fixture $ICEBERG_VERSION into $REST"
	mvn -q -B -Dstyle.color=never org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy \
		-Dartifact="org.apache.iceberg:iceberg-open-api:$ICEBERG_VERSION" -DoutputDirectory="$REST" \
		|| { echo "iceberg-tools: mvn could not fetch org.apache.iceberg:iceberg-open-api:$ICEBERG_VERSION" >&2; exit 1; }
fi
SRC=internal/testkit/icebergrest/LoopbackRESTCatalogServer.java
CLASSES=$REST/classes-$ICEBERG_VERSION
if [ ! -f "$CLASSES/org/apache/iceberg/rest/LoopbackRESTCatalogServer.class" ] || [ "$SRC" -nt "$CLASSES/org/apache/iceberg/rest/LoopbackRESTCatalogServer.class" ]; then
	mkdir -p "$CLASSES"
	javac -nowarn --release 11 -cp "$JAR" -d "$CLASSES" "$SRC"
fi
ln -sfn "$(basename "$JAR")" "$REST/fixture.jar"
ln -sfn "$(basename "$CLASSES")" "$REST/classes"

VENV=.bin/pyiceberg
have() {
	[ -x "$VENV/bin/python" ] && "$VENV/bin/python" - "$PYICEBERG_VERSION" <<'PYEOF' 2>/dev/null
import sys, pyiceberg, pyarrow, boto3
sys.exit(0 if pyiceberg.__version__ == sys.argv[1] else 1)
PYEOF
}
if ! have; then
	echo "installing pyiceberg $PYICEBERG_VERSION into $VENV"
	rm -rf "$VENV"
	python3 -m venv "$VENV"
	"$VENV/bin/pip" install --quiet --disable-pip-version-check \
		"pyiceberg[pyarrow,glue]==$PYICEBERG_VERSION" "pyarrow==$PYARROW_VERSION"
	have || { echo "iceberg-tools: the pyiceberg install into $VENV did not take" >&2; exit 1; }
fi
