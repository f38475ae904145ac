package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/childproc"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// Credentials of the local S3 server; moto_server accepts any. They guard
// loopback servers only.
const (
	AccessKey = "iggy-local"
	SecretKey = "iggy-local-secret"
	Region    = "us-east-1"
)

// Seed is sample traffic for the broker: Messages JSON log lines spread
// round-robin over Partitions partitions of Stream/Topic.
type Seed struct {
	Stream, Topic        string
	Partitions, Messages int
}

// The S3 servers a Stack can run (Options.S3).
const (
	Versitygw = "versitygw"
	MinIO     = "minio" // a test service only (AGPL-3.0), never shipped; make local LOCAL_S3=minio builds it
)

// Options configure a Stack. Zero fields take the defaults in brackets.
type Options struct {
	// Root is the repository, whose .bin/ holds the tools [working directory].
	Root string
	// S3 is the S3 server to run: Versitygw or MinIO [Versitygw]. Only the
	// one asked for is started, so only it needs building.
	S3 string
	// S3Port [9000], DynamoPort [8000] and IggyPort [8090] are tried
	// first; a port in use is replaced by a free one.
	S3Port, DynamoPort, IggyPort int
	Bucket                       string // [iggy-local]
	Table                        string // [iggy-s3-sink-state]
	Seed                         Seed   // [app/logs, 4 partitions, 1000 messages]
	// IggyProtocol is the protocol the test broker speaks: "0.8", "0.9"
	// or "0.10" [0.9, what Iggy 0.9 servers speak].
	IggyProtocol string
	Log          *slog.Logger
	// Progress, when set, gets one line per step as it ends: which server
	// answers where, the bucket, the table, the sample messages, and how
	// long each took.
	Progress io.Writer
}

// Stack is a running set of local stand-ins.
type Stack struct {
	S3Kind         string // "versitygw" or "MinIO"
	S3Endpoint     string
	DynamoEndpoint string
	IggyAddr       string
	IggyProtocol   string
	Bucket, Table  string
	Seed           Seed
	DataDir        string        // the S3 server's files
	Started        time.Duration // from Start's call to the stack being ready

	procs  []*childproc.Proc
	broker *iggytest.Broker
}

func (o *Options) defaults() {
	if o.Root == "" {
		o.Root, _ = os.Getwd()
	}
	o.S3Port = cmpOr(o.S3Port, 9000)
	o.DynamoPort = cmpOr(o.DynamoPort, 8000)
	o.IggyPort = cmpOr(o.IggyPort, 8090)
	if o.IggyProtocol == "" {
		o.IggyProtocol = iggytest.Protocol09
	}
	if o.Bucket == "" {
		o.Bucket = "iggy-local"
	}
	if o.Table == "" {
		o.Table = "iggy-s3-sink-state"
	}
	if o.Seed.Stream == "" {
		o.Seed = Seed{Stream: "app", Topic: "logs", Partitions: 4, Messages: 1000}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.S3 == "" {
		o.S3 = Versitygw
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// step writes a Progress line: what is done, and how long it took.
func step(o Options, took time.Duration, format string, args ...any) {
	fmt.Fprintf(o.Progress, "  %-66s %5.1fs\n", fmt.Sprintf(format, args...), took.Seconds())
}

func cmpOr(v, def int) int {
	if v != 0 {
		return v
	}
	return def
}

// Start starts S3 (versitygw, or MinIO when asked), moto_server and the
// broker, creates the bucket and the table, and seeds the broker, writing a
// line per step to o.Progress. On error everything started so far is
// stopped.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	o.defaults()
	if o.S3 != Versitygw && o.S3 != MinIO {
		return nil, fmt.Errorf("S3 server %q: want %q or %q", o.S3, Versitygw, MinIO)
	}
	began := time.Now()
	s := &Stack{Bucket: o.Bucket, Table: o.Table, Seed: o.Seed}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.DataDir, err = os.MkdirTemp("", "iggy-s3-sink-local-"); err != nil {
		return nil, err
	}
	// moto_server spends seconds importing Python before it answers: it
	// starts first, and S3 and the broker start meanwhile.
	moto, err := s.launchMoto(o)
	if err != nil {
		return nil, err
	}
	if err = s.startS3(o); err != nil {
		return nil, err
	}
	if err = s.startBroker(o); err != nil {
		return nil, err
	}
	if err = moto.WaitHTTP(s.DynamoEndpoint+"/moto-api/", func(st int) bool { return st == http.StatusOK }); err != nil {
		return nil, err
	}
	step(o, time.Since(moto.Started()), "moto_server answers at %s", s.DynamoEndpoint)

	t := time.Now()
	if err = s.createBucket(ctx); err != nil {
		return nil, err
	}
	step(o, time.Since(t), "created bucket %q", s.Bucket)
	t = time.Now()
	if err = state.NewDynamo(s.dynamoClient(), s.Table, nil).EnsureTable(ctx); err != nil {
		return nil, fmt.Errorf("create the state table: %w", err)
	}
	step(o, time.Since(t), "created table %q", s.Table)
	t = time.Now()
	sd := s.Seed
	if err = s.broker.Seed(sd.Stream, sd.Topic, sd.Partitions, sd.Messages); err != nil {
		return nil, fmt.Errorf("produce the sample messages: %w", err)
	}
	step(o, time.Since(t), "produced %d sample messages into %s/%s (%d partitions)", sd.Messages, sd.Stream, sd.Topic, sd.Partitions)
	s.Started = time.Since(began)
	return s, nil
}

func (s *Stack) startS3(o Options) error {
	port, err := childproc.FreePort(o.S3Port)
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s.S3Endpoint = "http://" + addr
	if o.S3 == MinIO {
		bin, err := FindTool(o.Root, "minio")
		if err != nil {
			return err
		}
		console, err := childproc.FreePort(0)
		if err != nil {
			return err
		}
		s.S3Kind = "MinIO"
		p, err := startProc("minio", bin, []string{"MINIO_ROOT_USER=" + AccessKey, "MINIO_ROOT_PASSWORD=" + SecretKey, "MINIO_BROWSER=off"},
			"server", s.DataDir, "--address", addr, "--console-address", "127.0.0.1:"+strconv.Itoa(console), "--quiet")
		if err != nil {
			return err
		}
		s.procs = append(s.procs, p)
		if err := p.WaitHTTP(s.S3Endpoint+"/minio/health/live", func(st int) bool { return st == http.StatusOK }); err != nil {
			return err
		}
		step(o, time.Since(p.Started()), "MinIO answers at %s", s.S3Endpoint)
		return nil
	}
	bin, err := FindTool(o.Root, "versitygw")
	if err != nil {
		return err
	}
	s.S3Kind = "versitygw"
	p, err := startProc("versitygw", bin, nil, "--access", AccessKey, "--secret", SecretKey, "--port", addr, "--quiet", "--keep-alive", "posix", s.DataDir)
	if err != nil {
		return err
	}
	s.procs = append(s.procs, p)
	// Unauthenticated requests get 403 once the server is up.
	if err := p.WaitHTTP(s.S3Endpoint+"/", func(st int) bool { return st == http.StatusForbidden }); err != nil {
		return err
	}
	step(o, time.Since(p.Started()), "versitygw answers at %s", s.S3Endpoint)
	return nil
}

// launchMoto starts moto_server; the caller waits for its answer.
func (s *Stack) launchMoto(o Options) (*childproc.Proc, error) {
	bin, err := FindTool(o.Root, "moto_server")
	if err != nil {
		return nil, err
	}
	port, err := childproc.FreePort(o.DynamoPort)
	if err != nil {
		return nil, err
	}
	s.DynamoEndpoint = "http://127.0.0.1:" + strconv.Itoa(port)
	p, err := startProc("moto_server", bin, nil, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, p)
	return p, nil
}

func (s *Stack) startBroker(o Options) error {
	t := time.Now()
	port, err := childproc.FreePort(o.IggyPort)
	if err != nil {
		return err
	}
	b, err := iggytest.Start(iggytest.WithAddr("127.0.0.1:"+strconv.Itoa(port)), iggytest.WithLogger(o.Log), iggytest.WithProtocol(o.IggyProtocol))
	if err != nil {
		return fmt.Errorf("start the Iggy test broker: %w", err)
	}
	s.broker, s.IggyAddr, s.IggyProtocol = b, b.Addr(), o.IggyProtocol
	step(o, time.Since(t), "the Iggy test broker listens at %s", s.IggyAddr)
	return nil
}

func (s *Stack) createBucket(ctx context.Context) error {
	client := s3.New(s3.Options{
		Region: Region, BaseEndpoint: aws.String(s.S3Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	})
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(s.Bucket)}); err != nil {
		return fmt.Errorf("create bucket %q: %w", s.Bucket, err)
	}
	return nil
}

func (s *Stack) dynamoClient() *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region: Region, BaseEndpoint: aws.String(s.DynamoEndpoint),
		Credentials: credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	})
}

// Env is the environment for `poller once`, `run`, `audit`, `check` and
// `status` against the stack, as NAME=value.
func (s *Stack) Env() []string {
	return []string{
		"AWS_REGION=" + Region,
		"AWS_ACCESS_KEY_ID=" + AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + SecretKey,
		"AWS_ENDPOINT_URL_S3=" + s.S3Endpoint,
		"AWS_ENDPOINT_URL_DYNAMODB=" + s.DynamoEndpoint,
		"IGGY_ADDRESS=" + s.IggyAddr,
		"SINK_BUCKET=" + s.Bucket,
		"SINK_STATE_TABLE=" + s.Table,
		"SINK_STREAM=" + s.Seed.Stream,
		"SINK_TOPICS=" + s.Seed.Topic,
		// Small objects and a short age, so that a first run writes objects
		// and the rest follows a minute later.
		"SINK_FILE_ROTATION=messages",
		"SINK_MAX_MESSAGES_PER_FILE=100",
		"SINK_MAX_FILE_AGE=1m",
	}
}

// WriteEnvFile writes Env as `export NAME=value` lines for a POSIX shell.
func (s *Stack) WriteEnvFile(path string) error {
	var b strings.Builder
	b.WriteString("# Written by `poller local` (make local) for the servers it runs; removed when it stops.\n")
	for _, kv := range s.Env() {
		b.WriteString("export " + kv + "\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// Describe writes what runs where.
func (s *Stack) Describe(w io.Writer) {
	sd := s.Seed
	fmt.Fprintf(w, "  S3        %s at %s, bucket %q\n", s.S3Kind, s.S3Endpoint, s.Bucket)
	fmt.Fprintf(w, "  DynamoDB  moto_server at %s, table %q\n", s.DynamoEndpoint, s.Table)
	fmt.Fprintf(w, "  Iggy      test broker at %s speaking Iggy %s's protocol (user iggy, password iggy), stream %q topic %q: %d partitions, %d messages\n",
		s.IggyAddr, s.IggyProtocol, sd.Stream, sd.Topic, sd.Partitions, sd.Messages)
}

// Close stops the broker and the servers and removes the S3 data.
func (s *Stack) Close() error {
	var errs []error
	if s.broker != nil {
		errs = append(errs, s.broker.Close())
	}
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].Stop()
	}
	if s.DataDir != "" {
		errs = append(errs, os.RemoveAll(s.DataDir))
	}
	return errors.Join(errs...)
}
