package testenv

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/childproc"
)

// Versity's fixed test credentials; they only ever guard a loopback server.
const (
	versityAccessKey = "test"
	versitySecretKey = "testtesttest"
	testRegion       = "us-east-1"
)

// S3 is a running S3-compatible server (versitygw or MinIO) backed by a
// temporary directory.
type S3 struct {
	Endpoint  string // http://127.0.0.1:<port>
	AccessKey string
	SecretKey string
	Region    string
	Root      string // the server's data directory (versitygw: buckets are its subdirectories)
	PID       int
}

// StartVersity starts versitygw on a free loopback port and stops it when the
// test ends. A missing binary skips the test (fails it when CI=true).
func StartVersity(t testing.TB) *S3 {
	t.Helper()
	bin := RequireTool(t, "versitygw")
	root := t.TempDir() // registered before the server, so removed after it stops
	var lastErr error
	// A free port can be taken between FreePort and the bind; try a few.
	for try := 0; try < 3; try++ {
		port := FreePort(t)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		// --keep-alive: versitygw closes every connection after its reply
		// unless told otherwise, where S3 and MinIO keep them; the sink's
		// connection reuse is then what is tested and measured.
		srv := start(t, bin, "--access", versityAccessKey, "--secret", versitySecretKey,
			"--port", addr, "--quiet", "--keep-alive", "posix", root)
		// Unauthenticated requests get 403 once the server is up.
		err := srv.WaitHTTP("http://"+addr+"/", func(status int) bool { return status == http.StatusForbidden })
		if err == nil {
			return &S3{
				Endpoint:  "http://" + addr,
				AccessKey: versityAccessKey,
				SecretKey: versitySecretKey,
				Region:    testRegion,
				Root:      root,
				PID:       srv.PID(),
			}
		}
		srv.Stop()
		lastErr = err
	}
	t.Fatalf("testenv: versitygw did not start: %v", lastErr)
	return nil
}

// Client returns an S3 client for the server: static credentials, path-style
// addressing, no SDK log output.
func (s *S3) Client(t testing.TB) *s3.Client {
	t.Helper()
	return s3.New(s3.Options{
		Region:                     s.Region,
		BaseEndpoint:               aws.String(s.Endpoint),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		Logger:                     logging.Nop{},
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// CreateBucket creates a bucket or fails the test.
func (s *S3) CreateBucket(t testing.TB, name string) {
	t.Helper()
	// MinIO can answer ready and still refuse requests with 503
	// XMinioServerNotInitialized for a while on a loaded machine.
	deadline := time.Now().Add(childproc.ReadyTimeout)
	for {
		_, err := s.Client(t).CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)})
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "StatusCode: 503") || time.Now().After(deadline) {
			t.Fatalf("testenv: create bucket %q: %v", name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Moto is a running moto_server (used for DynamoDB).
type Moto struct {
	Endpoint string // http://127.0.0.1:<port>
	PID      int
}

// StartMoto starts moto_server on a free loopback port and stops it when the
// test ends. A missing binary skips the test (fails it when CI=true).
func StartMoto(t testing.TB) *Moto {
	t.Helper()
	bin := RequireTool(t, "moto_server")
	var lastErr error
	for try := 0; try < 3; try++ {
		port := FreePort(t)
		endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
		srv := start(t, bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
		err := srv.WaitHTTP(endpoint+"/moto-api/", func(status int) bool { return status == http.StatusOK })
		if err == nil {
			return &Moto{Endpoint: endpoint, PID: srv.PID()}
		}
		srv.Stop()
		lastErr = err
	}
	t.Fatalf("testenv: moto_server did not start: %v", lastErr)
	return nil
}

// DynamoClient returns a DynamoDB client for the server (moto accepts any
// credentials).
func (m *Moto) DynamoClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	return dynamodb.New(dynamodb.Options{
		Region:       testRegion,
		BaseEndpoint: aws.String(m.Endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		Logger:       logging.Nop{},
	})
}
