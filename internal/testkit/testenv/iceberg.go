package testenv

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// IcebergREST is a running Iceberg REST catalog: Apache Iceberg's own REST
// fixture (scripts/iceberg-tools.sh installs it), its catalog in a SQLite
// file and its table files in an S3 store.
type IcebergREST struct {
	Endpoint  string // http://127.0.0.1:<port>
	Warehouse string
	PID       int
}

// StartIcebergREST starts the REST catalog on a free loopback port with
// warehouse (s3://bucket/path) in s3, and stops it when the test ends. A
// missing fixture or java skips the test (fails it when CI=true).
func StartIcebergREST(t testing.TB, s3 *S3, warehouse string) *IcebergREST {
	t.Helper()
	SkipInCheck(t, "the Iceberg REST catalog")
	dir := filepath.Join(RepoRoot(t), ".bin", "iceberg-rest")
	jar, classes := filepath.Join(dir, "fixture.jar"), filepath.Join(dir, "classes")
	if _, err := os.Stat(filepath.Join(classes, "org/apache/iceberg/rest/LoopbackRESTCatalogServer.class")); err != nil {
		missing(t, "the Iceberg REST catalog fixture ("+dir+"; scripts/iceberg-tools.sh installs it)")
	}
	java, err := exec.LookPath("java")
	if err != nil {
		missing(t, "java")
	}
	db := filepath.Join(t.TempDir(), "catalog.db")
	var lastErr error
	for try := 0; try < 3; try++ {
		port := FreePort(t)
		env := append(os.Environ(),
			"CATALOG_REST_PORT="+strconv.Itoa(port),
			// A file, not :memory: (each pooled connection would get its own empty database).
			"CATALOG_URI=jdbc:sqlite:"+db+"?journal_mode=WAL",
			"CATALOG_JDBC_SCHEMA__VERSION=V1",
			"CATALOG_WAREHOUSE="+warehouse,
			"CATALOG_IO__IMPL=org.apache.iceberg.aws.s3.S3FileIO",
			"CATALOG_S3_ENDPOINT="+s3.Endpoint,
			"CATALOG_S3_PATH__STYLE__ACCESS=true",
			"CATALOG_S3_ACCESS__KEY__ID="+s3.AccessKey,
			"CATALOG_S3_SECRET__ACCESS__KEY="+s3.SecretKey,
			"CATALOG_CLIENT_REGION="+s3.Region,
			"AWS_REGION="+s3.Region, "AWS_ACCESS_KEY_ID="+s3.AccessKey, "AWS_SECRET_ACCESS_KEY="+s3.SecretKey,
			"REST_HOST=127.0.0.1",
		)
		srv := startEnv(t, env, java, "-Xmx512m", "-Djava.net.preferIPv4Stack=true", "-cp", classes+":"+jar,
			"org.apache.iceberg.rest.LoopbackRESTCatalogServer")
		endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
		err := srv.WaitHTTP(endpoint+"/v1/config", func(status int) bool { return status == http.StatusOK })
		if err == nil {
			return &IcebergREST{Endpoint: endpoint, Warehouse: warehouse, PID: srv.PID()}
		}
		srv.Stop()
		lastErr = err
	}
	t.Fatalf("testenv: the Iceberg REST catalog did not start: %v", lastErr)
	return nil
}

// PyIceberg returns the python of the pyiceberg venv (scripts/iceberg-tools.sh).
func PyIceberg(t testing.TB) string {
	t.Helper()
	SkipInCheck(t, "pyiceberg")
	p := filepath.Join(RepoRoot(t), ".bin", "pyiceberg", "bin", "python")
	if _, err := os.Stat(p); err != nil {
		missing(t, "pyiceberg ("+p+"; scripts/iceberg-tools.sh installs it)")
	}
	return p
}

func missing(t testing.TB, what string) {
	t.Helper()
	if InCI() {
		t.Fatalf("testenv: %s is missing (CI=true: tools must be installed)", what)
	}
	t.Skipf("testenv: %s is missing", what)
}

// IcebergAvailable reports whether the REST catalog fixture, java and
// pyiceberg are installed, for tests that add Iceberg to a wider check
// rather than skip. In CI (CI=true) a missing one fails the test.
func IcebergAvailable(t testing.TB) bool {
	t.Helper()
	if CheckOnly() {
		return false
	}
	root := filepath.Join(RepoRoot(t), ".bin")
	_, err1 := os.Stat(filepath.Join(root, "iceberg-rest", "classes", "org/apache/iceberg/rest/LoopbackRESTCatalogServer.class"))
	_, err2 := os.Stat(filepath.Join(root, "pyiceberg", "bin", "python"))
	_, err3 := exec.LookPath("java")
	if err := errors.Join(err1, err2, err3); err != nil {
		if InCI() {
			t.Fatalf("testenv: the Iceberg tools are missing (CI=true: make iceberg-tools installs them): %v", err)
		}
		return false
	}
	return true
}
