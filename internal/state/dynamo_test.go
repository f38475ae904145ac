package state

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	miniserver "github.com/truora/minidyn/server"
)

// newDynamoClient talks to a local DynamoDB stand-in at url with static test credentials.
func newDynamoClient(url string) *dynamodb.Client {
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("test", "testtesttest", ""),
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(url)
		o.DisableValidateResponseChecksum = true // minidyn sends no X-Amz-Crc32
	})
}

func startMinidyn(t *testing.T) *dynamodb.Client {
	t.Helper()
	return newDynamoClient(serveMinidyn(t))
}

// serveMinidyn serves an in-process minidyn on loopback until the test or benchmark ends.
func serveMinidyn(tb testing.TB) string {
	srv := httptest.NewServer(miniserver.NewServer())
	tb.Cleanup(srv.Close)
	return srv.URL
}

// startMoto runs moto_server on a free loopback port until the test ends.
func startMoto(t testing.TB) *dynamodb.Client {
	t.Helper()
	return newDynamoClient(startMotoServer(t))
}

// startMotoServer starts a moto_server for t and returns its URL.
func startMotoServer(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("moto_server not on PATH (required when CI=true): %v", err)
		}
		t.Skipf("moto_server not on PATH: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start moto_server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("moto_server on %s not ready after 20s: %v\n%s", url, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return url
}

var tableSeq atomic.Int64

// dynamoStores gives each test a fresh table on the shared server.
func dynamoStores(client *dynamodb.Client) newStoreFunc {
	return func(t *testing.T, now func() time.Time) Store {
		t.Helper()
		d := NewDynamo(client, fmt.Sprintf("state-%d", tableSeq.Add(1)), now)
		d.tablePoll = 10 * time.Millisecond
		if err := d.EnsureTable(context.Background()); err != nil {
			t.Fatalf("EnsureTable: %v", err)
		}
		return d
	}
}

func TestDynamoMinidyn(t *testing.T) {
	client := startMinidyn(t)
	runStoreSuite(t, dynamoStores(client), map[string]string{
		"LargeOffsetsAndCounters": "minidyn v0.8.2 computes numbers as float64 and rounds values above 2^53",
	})
	t.Run("Table", func(t *testing.T) { runTableSuite(t, client) })
	t.Run("ItemLayout", func(t *testing.T) { checkItemLayout(t, client) })
	t.Run("UnknownAttributesKept", func(t *testing.T) { checkUnknownKept(t, client) })
}

func TestDynamoMoto(t *testing.T) {
	if testing.Short() {
		t.Skip("starts moto_server")
	}
	client := startMoto(t)
	runStoreSuite(t, dynamoStores(client), map[string]string{
		// moto_server serves requests on threads and evaluates conditions without a lock.
		"ConcurrentAcquireOneWinner": "moto 5.2.1 conditional writes are not atomic across concurrent requests",
	})
	t.Run("Table", func(t *testing.T) { runTableSuite(t, client) })
	t.Run("ItemLayout", func(t *testing.T) { checkItemLayout(t, client) })
	t.Run("UnknownAttributesKept", func(t *testing.T) { checkUnknownKept(t, client) })
}

func runTableSuite(t *testing.T, client *dynamodb.Client) {
	ctx := context.Background()
	t.Run("CheckMissingTable", func(t *testing.T) {
		name := fmt.Sprintf("missing-%d", tableSeq.Add(1))
		d := NewDynamo(client, name, nil)
		err := d.Check(ctx)
		if !errors.Is(err, ErrTableMissing) {
			t.Fatalf("Check: err = %v, want ErrTableMissing", err)
		}
		for _, want := range []string{fmt.Sprintf("%q", name), "SAM template", "poller"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Check error %q does not mention %s", err, want)
			}
		}
		if _, err := d.Acquire(ctx, testKey, "run-a", ttl); !errors.Is(err, ErrTableMissing) || !strings.Contains(err.Error(), name) {
			t.Errorf("Acquire on missing table: err = %v, want ErrTableMissing naming %s", err, name)
		}
		if _, _, err := d.Get(ctx, testKey); !errors.Is(err, ErrTableMissing) {
			t.Errorf("Get on missing table: err = %v, want ErrTableMissing", err)
		}
	})
	t.Run("EnsureTableCreates", func(t *testing.T) {
		d := NewDynamo(client, fmt.Sprintf("created-%d", tableSeq.Add(1)), nil)
		d.tablePoll = 10 * time.Millisecond
		if err := d.EnsureTable(ctx); err != nil {
			t.Fatalf("EnsureTable: %v", err)
		}
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(d.table)})
		if err != nil {
			t.Fatalf("DescribeTable after EnsureTable: %v", err)
		}
		if bm := out.Table.BillingModeSummary; bm != nil && bm.BillingMode != types.BillingModePayPerRequest {
			t.Errorf("billing mode %s, want PAY_PER_REQUEST", bm.BillingMode)
		}
		if err := d.Check(ctx); err != nil {
			t.Fatalf("Check after EnsureTable: %v", err)
		}
		if err := d.EnsureTable(ctx); err != nil {
			t.Fatalf("EnsureTable on an existing table: %v", err)
		}
		if _, err := d.Acquire(ctx, testKey, "run-a", ttl); err != nil {
			t.Fatalf("Acquire on the created table: %v", err)
		}
	})
	t.Run("CheckWrongKeySchema", func(t *testing.T) {
		name := fmt.Sprintf("wrong-%d", tableSeq.Add(1))
		_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(name),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		})
		if err != nil {
			t.Fatal(err)
		}
		err = NewDynamo(client, name, nil).Check(ctx)
		if err == nil || errors.Is(err, ErrTableMissing) || !strings.Contains(err.Error(), `partition key "pk"`) {
			t.Fatalf("Check on a table keyed by id: err = %v, want a key-schema error", err)
		}
	})
}
