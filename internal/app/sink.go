package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/explain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/fanout"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable/sinktables"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// Options are the process's choices that are not configuration.
type Options struct {
	// CreateTable creates the state table when it is missing, wherever
	// DynamoDB is (the poller's -create-table). The Lambda sets neither this
	// nor PollerTables: the template owns the table there, and a missing
	// one fails with a clear message.
	CreateTable bool
	// PollerTables is the poller's way with a missing state table: created
	// (with a warning) when DynamoDB is a local stand-in, a custom endpoint
	// off AWS such as moto or DynamoDB Local; against AWS an error naming
	// the tables of similar names (dynamodb:ListTables, which the function's
	// role lacks) and -create-table. A typo in state_table so never starts
	// from empty state in silence.
	PollerTables bool
	// ReadOnly makes New touch nothing remote: no table check or creation
	// (audit, status and check; check looks at the table itself).
	ReadOnly bool
	// State replaces DynamoDB (the demo and tests use state.NewMemory).
	State drain.StateStore
	// Objects replaces the S3 uploader built from the configuration.
	Objects ObjectStore
	Logger  *slog.Logger
	// Hooks are called by every run (metrics, crash tests); see drain.Hook.
	Hooks []drain.Hook
	// KeepLimit is the largest object built in memory; larger ones are
	// re-read from Iggy and streamed. Default: multipart_threshold.
	KeepLimit int64
	// Catalog replaces the Iceberg catalog the configuration names (tests).
	Catalog sinktables.Catalog
	// Marked, when set, is the markers a process has seen in S3, shared
	// by its sinks (tests play several sinks as one process); default the
	// sink's own.
	Marked *drain.MarkedGenerations
}

// ObjectStore is what the sink needs of S3.
type ObjectStore interface {
	drain.ObjectStore
}

// Sink is a configured sink, ready to run any number of times.
type Sink struct {
	Config  *config.Config
	Objects ObjectStore
	State   drain.StateStore
	log     *slog.Logger
	opts    Options
	iggy    source.Config
	// drainOpts is the configuration as every run takes it, translated once.
	drainOpts drain.Options
	host      string
	// tables registers archived objects in Iceberg tables (nil: table_format = "none").
	tables *sinktables.Tables
	// secretGave is what the credentials secret supplied (loadSecret), so
	// that a refused login names where the credentials came from.
	secretGave explain.SecretFields
	// ddbEndpoint is the DynamoDB endpoint the client resolved ("" for
	// AWS's own, by region).
	ddbEndpoint string
	runs        atomic.Uint64
	marked      drain.MarkedGenerations
}

// New builds the sink. AWS clients are made here, once; Iggy connections
// are made per run.
func New(ctx context.Context, cfg *config.Config, opts Options) (*Sink, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Sink{Config: cfg, log: log, opts: opts, State: opts.State, Objects: opts.Objects}
	host, _ := os.Hostname()
	s.host = fmt.Sprintf("%s/%d/%s", host, os.Getpid(), randomHex(4))

	pipe, err := Transformer(cfg)
	if err != nil {
		return nil, err
	}
	s.drainOpts = DrainOptions(cfg, pipe, opts.KeepLimit)

	needAWS := s.State == nil || s.Objects == nil || cfg.Iggy.CredentialsSecret != "" || cfg.Plugin.Tables()
	var awsCfg aws.Config
	if needAWS {
		awsCfg, err = awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cfg.ServicesRegion), awsconfig.WithHTTPClient(awsHTTPClient(&cfg.Plugin)))
		if err != nil {
			return nil, fmt.Errorf("aws configuration: %w", err)
		}
	}
	if s.Objects == nil {
		if s.Objects, err = newObjects(ctx, &cfg.Plugin, log); err != nil {
			return nil, err
		}
	}
	if s.State == nil {
		if err := s.newState(ctx, awsCfg); err != nil {
			return nil, err
		}
	}

	s.iggy = source.Config{
		Address: cfg.Iggy.Address, Protocol: string(cfg.Iggy.Protocol), Username: cfg.Iggy.Username, Password: cfg.Iggy.Password.Reveal(), Token: cfg.Iggy.Token.Reveal(),
		TLS: cfg.Iggy.TLSEnabled, TLSCAFile: cfg.Iggy.TLSCAFile, TLSDomain: cfg.Iggy.TLSDomain, ConnectTimeout: cfg.Iggy.ConnectTimeout,
		RequestTimeout: cfg.Iggy.RequestTimeout, Keepalive: cfg.Iggy.Keepalive,
		MaxPollReply: uint32(cfg.Plugin.MaxPollBytes + PollReplyMargin),
	}
	if id := cfg.Iggy.CredentialsSecret; id != "" {
		sm := secretsmanager.NewFromConfig(awsCfg, func(o *secretsmanager.Options) {
			o.APIOptions = append(o.APIOptions, callTimeout("Secrets Manager", cfg.Plugin.AWSCallTimeout))
		})
		if err := s.loadSecret(ctx, sm, id); err != nil {
			return nil, err
		}
	}
	// Read-only commands open the catalog too: the audit reads the tables.
	s.tables, err = sinktables.Open(ctx, sinktables.Params{Config: cfg, AWS: awsCfg, S3Endpoint: s3Endpoint(cfg.Plugin.Endpoint, log),
		Catalog: opts.Catalog, Objects: s.Objects, Names: s.drainOpts.Names, Hooks: opts.Hooks, Log: log}, &s.drainOpts.Records)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// newObjects is the S3 store plugin_config names.
func newObjects(ctx context.Context, p *config.Plugin, log *slog.Logger) (ObjectStore, error) {
	endpoint := s3Endpoint(p.Endpoint, log)
	pathStyle := p.PathStyle
	if endpoint == "" && pathStyle == nil && os.Getenv("AWS_ENDPOINT_URL_S3") != "" {
		// An S3-compatible store named the standard AWS way wants path style too.
		on := true
		pathStyle = &on
	}
	client, err := s3store.NewClient(ctx, s3store.ClientOptions{
		Region: p.Region, Endpoint: endpoint, PathStyle: pathStyle,
		AccessKeyID: p.AccessKeyID, SecretAccessKey: p.SecretAccessKey.Reveal(),
		ResponseHeaderTimeout: p.AWSRequestTimeout,
	})
	if err != nil {
		return nil, err
	}
	return s3store.New(client, s3store.Options{
		Bucket: p.Bucket, MaxAttempts: p.MaxAttempts, RetryDelay: p.RetryDelay,
		MultipartThreshold: p.MultipartThreshold, PartSize: p.PartSize,
		ServerSideEncryption: p.ServerSideEncryption, SSEKMSKeyID: p.SSEKMSKeyID,
		Checksum: p.Checksum, Logger: log,
	}), nil
}

// newState is the DynamoDB state table, checked (or created, as asked)
// unless the sink is read-only.
func (s *Sink) newState(ctx context.Context, awsCfg aws.Config) error {
	p := &s.Config.Plugin
	ddb := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxAttempts = 8 })
		o.APIOptions = append(o.APIOptions, callTimeout("DynamoDB", p.AWSCallTimeout))
	})
	s.ddbEndpoint = aws.ToString(ddb.Options().BaseEndpoint)
	store := state.NewDynamo(ddb, p.StateTable, nil)
	s.State = store
	if s.opts.ReadOnly {
		return nil
	}
	return s.setupTable(ctx, store)
}

// setupTable checks the state table. A missing one is created only when
// asked (CreateTable) or, for the poller, when DynamoDB is a local stand-in
// — loudly either way — since a mistyped table name would otherwise start
// from empty state in silence; else the error names it and what to do.
func (s *Sink) setupTable(ctx context.Context, store *state.Dynamo) error {
	table := s.Config.Plugin.StateTable
	err := store.Check(ctx)
	if errors.Is(err, state.ErrTableMissing) {
		switch {
		case s.opts.CreateTable:
			s.log.Warn("the state table does not exist; creating it, as asked (-create-table)", "table", table, "where", s.Explainer().DynamoWhere())
			err = store.EnsureTable(ctx)
		case s.opts.PollerTables && !explain.IsAWSEndpoint(s.ddbEndpoint):
			s.log.Warn("the state table does not exist; creating it, since this DynamoDB is a local stand-in, not AWS (against AWS the poller creates a table only with -create-table, the Lambda never)",
				"table", table, "where", s.Explainer().DynamoWhere())
			err = store.EnsureTable(ctx)
		}
	}
	if err != nil {
		return s.Explainer().Dynamo(ctx, table, err)
	}
	return nil
}

// SecretsAPI is the Secrets Manager call the sink makes.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// loadSecret reads Iggy credentials from a Secrets Manager secret: a JSON
// object with any of address, username, password, token; or a plain string,
// taken as the password.
func (s *Sink) loadSecret(ctx context.Context, sm SecretsAPI, id string) error {
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		return fmt.Errorf("iggy credentials: read secret %q (iggy.credentials_secret / IGGY_CREDENTIALS_SECRET): %w", id, err)
	}
	raw := aws.ToString(out.SecretString)
	if !strings.HasPrefix(strings.TrimSpace(raw), "{") {
		s.iggy.Password = raw
		s.secretGave = explain.SecretFields{ID: id, Password: true}
		return nil
	}
	var v struct{ Address, Username, Password, Token string }
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		// Never quote the secret's text.
		return fmt.Errorf("iggy credentials: secret %q is neither a JSON object with address/username/password/token nor a plain password", id)
	}
	if v.Address != "" {
		s.iggy.Address = v.Address
	}
	if v.Username != "" {
		s.iggy.Username = v.Username
		s.secretGave.Username = true
	}
	if v.Password != "" {
		s.iggy.Password = v.Password
		s.secretGave.Password = true
	}
	if v.Token != "" {
		s.iggy.Token = v.Token
		s.secretGave.Token = true
	}
	s.secretGave.ID = id
	return nil
}

// Runner returns a runner for one run, with a lease owner of its own.
func (s *Sink) Runner() *drain.Runner {
	n := s.runs.Add(1)
	return &drain.Runner{
		Options: s.drainOpts,
		Dial:    s.dial,
		State:   s.State,
		Objects: s.Objects,
		Owner:   fmt.Sprintf("%s/run-%d", s.host, n),
		Logger:  s.log,
		Hooks:   s.opts.Hooks,
		Marked:  s.markedGenerations(),
		// A cohort member (RunMember) does not: its settling waits for a
		// state write of every partition it was given.
		LeaveIdle: true,
	}
}

func (s *Sink) markedGenerations() *drain.MarkedGenerations {
	if s.opts.Marked != nil {
		return s.opts.Marked
	}
	return &s.marked
}

// Run drains once, within run_timeout (and the caller's deadline).
func (s *Sink) Run(ctx context.Context) (*drain.Summary, error) {
	ctx, cancel := withRunTimeout(ctx, &s.Config.Plugin)
	defer cancel()
	return s.tables.Run(ctx, s.Runner())
}

// dial connects and resolves the configured topics, refusing the run when
// two of them are one topic or would share keys.
func (s *Sink) dial(ctx context.Context) (drain.Conn, error) {
	conn, err := s.OpenIggy(ctx)
	if err != nil {
		return nil, err
	}
	level := slog.LevelDebug
	if s.Config.Iggy.FindsProtocol() {
		level = slog.LevelInfo // what auto found is worth a line per run
	}
	s.log.Log(ctx, level, "connected to Iggy", "address", s.iggy.Address, "speaks", conn.Speaks(), "iggy_protocol", s.Config.Iggy.Protocol)
	if _, err := resolveTopics(ctx, conn, s.Config); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// RunMember drains once as a cohort member: the run's connection joins
// the consumer groups through settler (see fanout.Settler).
func (s *Sink) RunMember(ctx context.Context, settler *fanout.Settler) (*drain.Summary, error) {
	r := s.Runner()
	r.LeaveIdle = false
	settler.Owner = r.Owner
	if lr, ok := s.State.(fanout.LeaseReader); ok {
		settler.Leases = lr
	}
	dial := r.Dial
	r.Dial = func(ctx context.Context) (drain.Conn, error) {
		c, err := dial(ctx)
		if err != nil {
			return nil, err
		}
		return settler.Wrap(c), nil
	}
	ctx, cancel := withRunTimeout(ctx, &s.Config.Plugin)
	defer cancel()
	return s.tables.Run(ctx, r)
}

// plan measures every partition's lag and sizes the cohort; busy names a
// consumer group that already has members (a cohort still draining).

// Coordinator runs this sink's Lambda invocations with fan-out.
func (s *Sink) Coordinator() *fanout.Coordinator {
	pc := &s.Config.Plugin
	return &fanout.Coordinator{Sink: s, Streams: s.drainOpts.Streams, Open: s.OpenIggy, Log: s.log,
		Settings: fanout.Settings{MaxWorkers: pc.MaxWorkers, WorkerRate: pc.WorkerRate, SettleTimeout: pc.SettleTimeout, DeadlineMargin: pc.DeadlineMargin}}
}

// OpenIggy connects and logs in to Iggy; a refused login names the
// settings that hold the credentials.
func (s *Sink) OpenIggy(ctx context.Context) (*source.Conn, error) {
	conn, err := source.Open(ctx, s.iggy)
	if err != nil {
		return nil, s.Explainer().Iggy(err)
	}
	return conn, nil
}

// OpenIggyAt is OpenIggy to the server at address ("" : the configured
// one), with the configured credentials and protocol: a replay's target.
func (s *Sink) OpenIggyAt(ctx context.Context, address string) (*source.Conn, error) {
	cfg := s.iggy
	if address != "" {
		cfg.Address = address
	}
	conn, err := source.Open(ctx, cfg)
	if err != nil {
		return nil, s.Explainer().Iggy(err)
	}
	return conn, nil
}

// Explainer says which setting to fix after a failure of Iggy, S3 or
// DynamoDB, knowing where each is and what the credentials secret gave.
func (s *Sink) Explainer() *explain.Explainer {
	e := &explain.Explainer{Plugin: &s.Config.Plugin, ServicesRegion: s.Config.ServicesRegion, DynamoEndpoint: s.ddbEndpoint,
		PollerTables: s.opts.PollerTables, Token: s.iggy.Token != "", Secret: s.secretGave, Log: s.log}
	if l, ok := s.State.(explain.TableLister); ok {
		e.Tables = l
	}
	return e
}

// OpenTopics connects as OpenIggy does and refuses, as a run does, a
// configuration two of whose topics are one or would share keys.
func (s *Sink) OpenTopics(ctx context.Context) (*source.Conn, error) {
	conn, err := s.OpenIggy(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := resolveTopics(ctx, conn, s.Config); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// Names names every object the sink writes.
func (s *Sink) Names() *keys.Namer { return s.drainOpts.Names }

// AuditTables checks the Iceberg tables of the audited partitions
// (table_format = "iceberg"; none otherwise).
func (s *Sink) AuditTables(ctx context.Context, reports []audit.Report) ([]audit.TableReport, error) {
	return s.tables.Audit(ctx, reports)
}
