package testenv

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestRepoRootHoldsGoMod(t *testing.T) {
	root := RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatalf("read go.mod: %v", err)
	}
	if !strings.Contains(string(data), "module github.com/iggy-s3-sink/iggy-s3-sink") {
		t.Fatalf("RepoRoot %s holds another module's go.mod", root)
	}
}

func TestFreePortCanBeBound(t *testing.T) {
	p := FreePort(t)
	if p <= 0 || p > 65535 {
		t.Fatalf("FreePort = %d", p)
	}
}

func TestVersityStartsAndStops(t *testing.T) {
	srv := StartVersity(t)
	srv.CreateBucket(t, "probe")
	ctx := context.Background()
	c := srv.Client(t)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("probe"), Key: aws.String("a/b"),
		Body: strings.NewReader("hello")}); err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	// The posix backend stores objects as plain files under Root.
	data, err := os.ReadFile(filepath.Join(srv.Root, "probe", "a", "b"))
	if err != nil || string(data) != "hello" {
		t.Fatalf("object file = %q, %v; want hello", data, err)
	}
	if !strings.HasPrefix(srv.Endpoint, "http://127.0.0.1:") {
		t.Fatalf("Endpoint %q is not loopback", srv.Endpoint)
	}
	pid := srv.PID
	t.Cleanup(func() {
		// Runs before the server's own cleanup (LIFO), so only check it lives.
		if err := syscall.Kill(pid, 0); err != nil {
			t.Errorf("versitygw pid %d not running before cleanup: %v", pid, err)
		}
	})
}

func TestVersityStoppedAfterCleanup(t *testing.T) {
	var pid int
	var endpoint string
	t.Run("inner", func(t *testing.T) {
		srv := StartVersity(t)
		pid, endpoint = srv.PID, srv.Endpoint
	})
	if pid == 0 {
		t.Skip("inner test skipped")
	}
	// The process may take a moment to exit after SIGTERM; the child was
	// reaped by cleanup, so kill(pid, 0) fails once it is gone.
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("versitygw pid %d still running after cleanup", pid)
	}
	client := &http.Client{Timeout: time.Second}
	if resp, err := client.Get(endpoint + "/"); err == nil {
		resp.Body.Close()
		t.Fatalf("%s still answers after cleanup", endpoint)
	}
}

func TestMotoServesDynamoDB(t *testing.T) {
	m := StartMoto(t)
	ctx := context.Background()
	out, err := m.DynamoClient(t).ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	if len(out.TableNames) != 0 {
		t.Fatalf("fresh moto has tables %v", out.TableNames)
	}
}

func TestMinIOStartsAndStops(t *testing.T) {
	var pid int
	t.Run("inner", func(t *testing.T) {
		srv := StartMinIO(t)
		pid = srv.PID
		srv.CreateBucket(t, "probe")
		ctx := context.Background()
		c := srv.Client(t)
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("probe"), Key: aws.String("a/b"),
			Body: strings.NewReader("hello")}); err != nil {
			t.Fatalf("PutObject: %v", err)
		}
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("probe"), Key: aws.String("a/b")})
		if err != nil {
			t.Fatalf("GetObject: %v", err)
		}
		defer out.Body.Close()
		buf := make([]byte, 16)
		n, _ := out.Body.Read(buf)
		if string(buf[:n]) != "hello" {
			t.Fatalf("read back %q, want hello", buf[:n])
		}
		if !strings.HasPrefix(srv.Endpoint, "http://127.0.0.1:") {
			t.Fatalf("Endpoint %q is not loopback", srv.Endpoint)
		}
		if _, err := os.Stat(filepath.Join(srv.Root, "probe")); err != nil {
			t.Fatalf("bucket directory missing under Root: %v", err)
		}
	})
	if pid == 0 {
		t.Skip("inner test skipped")
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("minio pid %d still running after cleanup", pid)
	}
}
