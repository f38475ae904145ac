package testenv

import (
	"net/http"
	"os"
	"strconv"
	"testing"
)

// MinIO's test credentials; they only ever guard a loopback server. Not
// MinIO's defaults, which it warns about on every start. The password must be
// at least 8 characters.
const (
	minioAccessKey = "sink-test"
	minioSecretKey = "sink-test-secret"
)

// StartMinIO starts a MinIO server (a test service only: MinIO is AGPL and
// never part of the product) on a free loopback port with its own data
// directory, the console on a second loopback port and the browser off, and
// stops it by PID when the test ends. Root is MinIO's data directory (its
// own on-disk format, not plain files). A missing .bin/minio (`make tools`
// builds it) skips the test, or fails it when CI=true.
func StartMinIO(t testing.TB) *S3 {
	t.Helper()
	bin := RequireTool(t, "minio")
	root := t.TempDir() // registered before the server, so removed after it stops
	env := append(os.Environ(),
		"MINIO_ROOT_USER="+minioAccessKey,
		"MINIO_ROOT_PASSWORD="+minioSecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
		// No call home, no anonymous usage reports.
		"MINIO_CALLHOME_ENABLE=off",
	)
	var lastErr error
	for try := 0; try < 3; try++ {
		addr := "127.0.0.1:" + strconv.Itoa(FreePort(t))
		console := "127.0.0.1:" + strconv.Itoa(FreePort(t))
		srv := startEnv(t, env, bin, "server", root, "--address", addr, "--console-address", console, "--quiet")
		// Live is not enough: until MinIO has initialised its drive it answers
		// 503 XMinioServerNotInitialized to S3 requests.
		err := srv.WaitHTTP("http://"+addr+"/minio/health/ready", func(status int) bool { return status == http.StatusOK })
		if err == nil {
			return &S3{
				Endpoint:  "http://" + addr,
				AccessKey: minioAccessKey,
				SecretKey: minioSecretKey,
				Region:    testRegion,
				Root:      root,
				PID:       srv.PID(),
			}
		}
		srv.Stop()
		lastErr = err
	}
	t.Fatalf("testenv: minio did not start: %v", lastErr)
	return nil
}
