package state

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	miniserver "github.com/truora/minidyn/server"
)

// faultProxy sits in front of minidyn (or moto_server) and lets a test decide, per request, what DynamoDB "does".
type faultProxy struct {
	next  http.Handler
	mu    sync.Mutex
	fault func(op string, n int) fault // n counts requests of op, from 1
	count map[string]int
}

type fault int

const (
	pass      fault = iota
	throttle        // 400 ProvisionedThroughputExceededException, request not applied
	loseReply       // request applied, then a 500 instead of the reply
	fail500         // 500, request not applied
)

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndex(target, ".")+1:]
	p.mu.Lock()
	p.count[op]++
	f := pass
	if p.fault != nil {
		f = p.fault(op, p.count[op])
	}
	p.mu.Unlock()
	awsError := func(status int, typ string) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(status)
		io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#`+typ+`","message":"injected by test"}`)
	}
	switch f {
	case throttle:
		awsError(http.StatusBadRequest, "ProvisionedThroughputExceededException")
	case fail500:
		awsError(http.StatusInternalServerError, "InternalServerError")
	case loseReply:
		p.next.ServeHTTP(httptest.NewRecorder(), r)
		awsError(http.StatusInternalServerError, "InternalServerError")
	default:
		p.next.ServeHTTP(w, r)
	}
}

func (p *faultProxy) requests(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.count[op]
}

func (p *faultProxy) setFault(f func(op string, n int) fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault, p.count = f, map[string]int{}
}

const faultAttempts = 4

// startFaultyDynamo returns a store whose client retries like production (standard retryer),
// minus the waiting.
func startFaultyDynamo(t *testing.T) (*Dynamo, *faultProxy) {
	t.Helper()
	return startFaultyDynamoOn(t, miniserver.NewServer())
}

// startFaultyDynamoOn is startFaultyDynamo in front of next.
func startFaultyDynamoOn(t *testing.T, next http.Handler) (*Dynamo, *faultProxy) {
	t.Helper()
	proxy := &faultProxy{next: next, count: map[string]int{}}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "testtesttest", "")}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.DisableValidateResponseChecksum = true
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = faultAttempts
			so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
			so.RateLimiter = ratelimit.None
		})
	})
	d := NewDynamo(client, "faulty", nil)
	d.tablePoll = time.Millisecond
	if err := d.EnsureTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d, proxy
}

// TestDynamoLostReplyIsNotLost: the SDK retries a write whose reply was lost; the retry fails its
// version check, and the store must recognise its own first attempt instead of reporting ErrLeaseLost.
func TestDynamoLostReplyIsNotLost(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		write func(d *Dynamo, s State) (State, error)
		check func(t *testing.T, before, after State)
	}{
		{"SetIntent", func(d *Dynamo, s State) (State, error) {
			return d.SetIntent(ctx, s, Intent{First: 10, Last: 19, ObjectKey: "k2"}, ttl)
		}, func(t *testing.T, _, after State) {
			if after.Intent == nil || after.Intent.First != 10 {
				t.Errorf("intent %+v, want 10..19", after.Intent)
			}
		}},
		{"Complete", func(d *Dynamo, s State) (State, error) {
			s, err := d.SetIntent(ctx, s, Intent{First: 10, Last: 19, ObjectKey: "k2"}, ttl)
			if err != nil {
				return s, err
			}
			return d.Complete(ctx, s, Done{Messages: 10, Bytes: 100}, ttl)
		}, func(t *testing.T, before, after State) {
			if after.Objects != before.Objects+1 || after.Messages != before.Messages+10 || after.LastWritten != 19 {
				t.Errorf("objects %d messages %d last %d; want the object counted once", after.Objects, after.Messages, after.LastWritten)
			}
		}},
		{"Skip", func(d *Dynamo, s State) (State, error) { return d.Skip(ctx, s, 30, 20, ttl) }, func(t *testing.T, before, after State) {
			if after.LastWritten != 30 || after.GapMessages != before.GapMessages+20 {
				t.Errorf("last %d gaps %d; want 30, counted once", after.LastWritten, after.GapMessages)
			}
		}},
		{"Renew", func(d *Dynamo, s State) (State, error) { return d.Renew(ctx, s, ttl) }, func(*testing.T, State, State) {}},
	}
	// minidyn returns no item when a PutItem's condition fails (the store
	// reads it back); moto, like DynamoDB, returns it with the failure.
	backends := []struct {
		name string
		next func(t *testing.T) http.Handler
	}{
		{"minidyn", func(*testing.T) http.Handler { return miniserver.NewServer() }},
		{"moto", func(t *testing.T) http.Handler {
			if testing.Short() {
				t.Skip("starts moto_server")
			}
			u, err := url.Parse(startMotoServer(t))
			if err != nil {
				t.Fatal(err)
			}
			return httputil.NewSingleHostReverseProxy(u)
		}},
	}
	for _, b := range backends {
		for _, tc := range tests {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				d, proxy := startFaultyDynamoOn(t, b.next(t))
				s, err := d.Acquire(ctx, testKey, "run-a", ttl)
				if err != nil {
					t.Fatal(err)
				}
				if s, err = d.Skip(ctx, s, 9, 0, ttl); err != nil {
					t.Fatal(err)
				}
				updates := 0
				proxy.setFault(func(op string, n int) fault {
					if op != "PutItem" { // the writes after Acquire
						return pass
					}
					updates++
					if updates%2 == 1 { // every write's first attempt applies but loses its reply
						return loseReply
					}
					return pass
				})
				after, err := tc.write(d, s)
				if err != nil {
					t.Fatalf("write with a lost reply: %v", err)
				}
				proxy.setFault(nil)
				stored, _, err := d.Get(ctx, testKey)
				if err != nil {
					t.Fatal(err)
				}
				assertState(t, "returned vs stored", after, stored)
				tc.check(t, s, stored)
				writes := map[string]int64{"Complete": 2}[tc.name]
				if writes == 0 {
					writes = 1
				}
				if stored.Version != s.Version+writes {
					t.Errorf("version %d, want %d: each write applied once", stored.Version, s.Version+writes)
				}
			})
		}
	}

	t.Run("RepeatedCallStillLost", func(t *testing.T) {
		d, _ := startFaultyDynamo(t)
		s, err := d.Acquire(ctx, testKey, "run-a", ttl)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Renew(ctx, s, ttl); err != nil {
			t.Fatal(err)
		}
		// A second call is a new write, not a retry: it must not pass for the first.
		if _, err := d.Renew(ctx, s, ttl); !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("second Renew of the same state: err = %v, want ErrLeaseLost", err)
		}
	})
}

// TestDynamoAmbiguousWriteIsReadBack: the first attempt applies and every
// attempt's reply is lost, so the client gives up with an error. The store
// must read the item back and see that its write took effect, or the caller
// keeps a stale copy (and then cannot release its lease).
func TestDynamoAmbiguousWriteIsReadBack(t *testing.T) {
	ctx := context.Background()
	for _, applies := range []bool{true, false} {
		t.Run(map[bool]string{true: "applied", false: "not-applied"}[applies], func(t *testing.T) {
			d, proxy := startFaultyDynamo(t)
			s, err := d.Acquire(ctx, testKey, "run-a", ttl)
			if err != nil {
				t.Fatal(err)
			}
			proxy.setFault(func(op string, n int) fault {
				switch {
				case op != "PutItem":
					return pass
				case n == 1 && applies:
					return loseReply
				default:
					return fail500
				}
			})
			in := Intent{First: 0, Last: 9, ObjectKey: "k"}
			got, err := d.SetIntent(ctx, s, in, ttl)
			if proxy.requests("PutItem") != faultAttempts {
				t.Fatalf("%d PutItem attempts, want %d", proxy.requests("PutItem"), faultAttempts)
			}
			proxy.setFault(nil)
			stored, _, gerr := d.Get(ctx, testKey)
			if gerr != nil {
				t.Fatal(gerr)
			}
			if !applies {
				if err == nil {
					t.Fatalf("a write that never applied returned no error (%s)", stateString(got))
				}
				assertState(t, "unchanged", stored, s)
				return
			}
			if err != nil {
				t.Fatalf("a write that applied returned %v", err)
			}
			assertState(t, "returned vs stored", got, stored)
			if err := d.Release(ctx, got); err != nil {
				t.Fatalf("Release with the read-back copy: %v", err)
			}
		})
	}
}

func TestDynamoThrottlingRetried(t *testing.T) {
	ctx := context.Background()
	d, proxy := startFaultyDynamo(t)
	proxy.setFault(func(op string, n int) fault {
		if n <= faultAttempts-1 {
			return throttle
		}
		return pass
	})
	s, err := d.Acquire(ctx, testKey, "run-a", ttl)
	if err != nil {
		t.Fatalf("Acquire under throttling: %v", err)
	}
	if got := proxy.requests("UpdateItem"); got != faultAttempts {
		t.Errorf("UpdateItem sent %d times, want %d", got, faultAttempts)
	}
	if _, _, err := d.Get(ctx, testKey); err != nil {
		t.Fatalf("Get under throttling: %v", err)
	}
	if s.Version != 1 {
		t.Errorf("version %d, want 1", s.Version)
	}
}

func TestDynamoPersistentErrorNamesTableAndKey(t *testing.T) {
	ctx := context.Background()
	d, proxy := startFaultyDynamo(t)
	s, err := d.Acquire(ctx, testKey, "run-a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	proxy.setFault(func(op string, n int) fault { return fail500 })
	calls := []struct {
		name string
		call func() error
	}{
		{"acquire", func() error { _, err := d.Acquire(ctx, testKey, "run-a", ttl); return err }},
		{"renew", func() error { _, err := d.Renew(ctx, s, ttl); return err }},
		{"release", func() error { return d.Release(ctx, s) }},
		{"get", func() error { _, _, err := d.Get(ctx, testKey); return err }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			var ise *types.InternalServerError
			if !errors.As(err, &ise) || errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrLeaseHeld) {
				t.Fatalf("err = %v, want a wrapped InternalServerError", err)
			}
			for _, want := range []string{`table "faulty"`, testKey.ID(), c.name} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
		})
	}
	// Acquire is an UpdateItem, renew and release are PutItems.
	if got, want := proxy.requests("UpdateItem")+proxy.requests("PutItem"), 3*faultAttempts; got != want {
		t.Errorf("%d writes sent for 3 write calls, want %d (the SDK's retries)", got, want)
	}
}

// fakeTables scripts DescribeTable/CreateTable replies for EnsureTable's waiting logic.
type fakeTables struct {
	DynamoAPI
	statuses  []types.TableStatus // DescribeTable replies after CreateTable; "missing" before
	createErr error
	created   atomic.Bool
	describes int
}

func (f *fakeTables) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	if !f.created.Load() {
		return nil, &types.ResourceNotFoundException{Message: aws.String("no table")}
	}
	st := f.statuses[min(f.describes, len(f.statuses)-1)]
	f.describes++
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{
		TableName: in.TableName, TableStatus: st,
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash}},
	}}, nil
}

func (f *fakeTables) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	if in.BillingMode != types.BillingModePayPerRequest || len(in.KeySchema) != 1 || aws.ToString(in.KeySchema[0].AttributeName) != attrPK {
		return nil, errors.New("fake: unexpected CreateTable input")
	}
	f.created.Store(true)
	return &dynamodb.CreateTableOutput{}, f.createErr
}

func TestEnsureTableWaits(t *testing.T) {
	tests := []struct {
		name      string
		statuses  []types.TableStatus
		createErr error
		timeout   time.Duration
		wantErr   string
		wantPolls int
	}{
		{"active after creating", []types.TableStatus{"CREATING", "CREATING", "ACTIVE"}, nil, time.Minute, "", 3},
		{"no status (minidyn)", []types.TableStatus{""}, nil, time.Minute, "", 1},
		{"created concurrently", []types.TableStatus{"ACTIVE"}, &types.ResourceInUseException{Message: aws.String("exists")}, time.Minute, "", 1},
		{"being deleted", []types.TableStatus{"DELETING"}, nil, time.Minute, "is DELETING, not usable", 1},
		{"never ready", []types.TableStatus{"CREATING"}, nil, 30 * time.Millisecond, "context deadline exceeded", 0},
		{"create refused", []types.TableStatus{"ACTIVE"}, errors.New("AccessDenied"), time.Minute, `create table "t": AccessDenied`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTables{statuses: tc.statuses, createErr: tc.createErr}
			d := NewDynamo(f, "t", nil)
			d.tablePoll = time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			err := d.EnsureTable(ctx)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("EnsureTable: %v", err)
				}
				if f.describes != tc.wantPolls {
					t.Errorf("DescribeTable polled %d times after create, want %d", f.describes, tc.wantPolls)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
