package drain_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	iggcon "github.com/apache/iggy/foreign/go/contracts"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/logging"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	miniserver "github.com/truora/minidyn/server"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/ops"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/iggyadmin"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/s3fake"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// Secrets used by every end-to-end test; no log line or error may contain them.
const (
	iggyUser     = "sink-user"
	iggyPassword = "iggy-pw-7f3a9c"
)

// world is one set of servers on loopback: the in-repo Iggy broker (or a
// real Iggy server named by IGGY_TEST_ADDRESS), an S3 and a DynamoDB, each
// in process or real, per backend.
type world struct {
	t *testing.T
	// iggy creates topics, produces and reads group offsets; broker is the
	// same in-repo broker with its fault hooks, nil against a real server.
	iggy     iggyadmin.Admin
	broker   *iggytest.Broker
	stream   string
	user     string
	password string
	backend  string
	s3       *testenv.S3
	// fakeS3 is the in-process S3 (with its fault switch), nil otherwise.
	fakeS3 *s3fake.Server
	// moto is the DynamoDB server of the external backends; dynamoURL
	// replaces its address (a proxy in front of it). The in-process backend
	// has a minidyn server at dynamoURL instead.
	moto      *testenv.Moto
	dynamoURL string
	logs      *testenv.LockedBuffer
	// produced[stream/topic][partition][offset] is every payload sent.
	produced map[string][][]sent
	// mu guards produced and created, which a world's subtests share (they
	// may run in parallel).
	mu *sync.Mutex
	// created holds the buckets ("bucket/<name>") and streams ("stream/<name>")
	// made so far, shared by a world's subtests.
	created map[string]bool
	// payload, when set, makes produce's payloads instead of jsonPayload.
	payload func(p, n, size int) []byte
	// ice is the world's Iceberg catalog, started when a test asks.
	ice *icebergWorld
	// catalog, when set, is the Iceberg catalog every sink uses (the
	// model's shared one) instead of the configuration's.
	catalog icetable.Catalog
}

type sent struct {
	payload []byte
	headers []byte
}

// backends are the S3 and DynamoDB servers the drain's tests run against.
// inproc (gofakes3 and minidyn in this process) always runs, so the
// protocol is proven on a machine with nothing installed; the others run
// when their servers are installed (always in CI). DRAIN_BACKENDS=inproc
// (a comma-separated list) picks some.
var backends = []struct {
	name  string
	start func(t *testing.T, w *world)
}{
	{"inproc", func(t *testing.T, w *world) {
		w.fakeS3 = s3fake.Start(t)
		w.s3 = w.fakeS3.S3
		// minidyn neither locks its table map nor makes a conditional update
		// atomic against another request: one request at a time gives
		// DynamoDB's per-item atomicity.
		mini := miniserver.NewServer()
		var mu sync.Mutex
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			mini.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		w.dynamoURL = srv.URL
	}},
	{"versitygw", func(t *testing.T, w *world) {
		w.s3, w.moto = testenv.StartVersity(t), testenv.StartMoto(t)
	}},
	{"minio", func(t *testing.T, w *world) {
		w.s3, w.moto = testenv.StartMinIO(t), testenv.StartMoto(t)
	}},
}

// eachBackend runs test once per selected backend, as subtests.
func eachBackend(t *testing.T, test func(t *testing.T, w *world)) {
	eachBackendWith(t, nil, test)
}

// eachBackendWith is eachBackend with options for the in-repo broker.
func eachBackendWith(t *testing.T, broker []iggytest.Option, test func(t *testing.T, w *world)) {
	picked := strings.Split(os.Getenv("DRAIN_BACKENDS"), ",")
	for _, b := range backends {
		if picked[0] != "" && !slices.Contains(picked, b.name) {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, broker...)
			w.backend = b.name
			b.start(t, w)
			test(t, w)
		})
	}
}

func newWorld(t *testing.T, brokerOpts ...iggytest.Option) *world {
	t.Helper()
	w := &world{t: t, stream: "app", user: iggyUser, password: iggyPassword}
	if real := iggyadmin.FromEnv(t); real != nil {
		w.iggy, w.stream, w.user, w.password = real, uniqueName("app"), real.Username, real.Password
	} else {
		opts := append([]iggytest.Option{iggytest.WithUser(iggyUser, iggyPassword), iggytest.WithLogger(slog.New(slog.DiscardHandler)),
			iggytest.WithProtocol(iggyadmin.BrokerProtocol(t))}, brokerOpts...)
		b, err := iggytest.Start(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		w.iggy, w.broker = b, b
	}
	w.logs, w.produced, w.created, w.mu = &testenv.LockedBuffer{}, map[string][][]sent{}, map[string]bool{}, &sync.Mutex{}
	w.ice = &icebergWorld{t: t}
	t.Cleanup(func() { w.assertNoSecrets(); w.assertReadAheadGivenBack() })
	return w
}

// uniqueName keeps runs against one long-lived server apart.
func uniqueName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// hooks returns the in-repo broker for a test that needs its fault hooks,
// and skips the test against a real server.
func (w *world) hooks(t *testing.T) *iggytest.Broker {
	t.Helper()
	if w.broker == nil {
		t.Skip("needs the in-repo broker's fault hooks; IGGY_TEST_ADDRESS points at a real server")
	}
	return w.broker
}

// with returns the world bound to subtest t.
func (w *world) with(t *testing.T) *world {
	c := *w
	c.t = t
	return &c
}

// settings is a sink configuration in environment form, pointed at the world.
func (w *world) settings(bucket, topic string) map[string]string {
	return map[string]string{
		"IGGY_ADDRESS":           w.iggy.Addr(),
		"IGGY_USERNAME":          w.user,
		"IGGY_PASSWORD":          w.password,
		"IGGY_CONNECT_TIMEOUT":   "2s",
		"SINK_STREAM":            w.stream,
		"SINK_TOPICS":            topic,
		"SINK_CONSUMER_GROUP":    "sink-" + bucket,
		"SINK_BUCKET":            bucket,
		"SINK_REGION":            w.s3.Region,
		"SINK_ENDPOINT":          w.s3.Endpoint,
		"SINK_ACCESS_KEY_ID":     w.s3.AccessKey,
		"SINK_SECRET_ACCESS_KEY": w.s3.SecretKey,
		"SINK_PREFIX":            "archive",
		"SINK_INCLUDE_HEADERS":   "true",
		"SINK_STATE_TABLE":       "sink-state-" + bucket,
		"SINK_MAX_FILE_AGE":      "1ms",
		"SINK_LEASE_DURATION":    "1s",
		"SINK_RETRY_DELAY":       "10ms",
		"SINK_MAX_ATTEMPTS":      "5",
	}
}

func (w *world) config(settings map[string]string) *config.Config {
	w.t.Helper()
	cfg, err := config.Load("", func(k string) (string, bool) { v, ok := settings[k]; return v, ok })
	if err != nil {
		w.t.Fatalf("config: %v", err)
	}
	return cfg
}

// sink builds a sink the way the poller does, with DynamoDB on moto (or
// minidyn, in process).
func (w *world) sink(cfg *config.Config, opts app.Options) *app.Sink {
	w.t.Helper()
	w.mu.Lock()
	if !w.created["bucket/"+cfg.Plugin.Bucket] {
		w.s3.CreateBucket(w.t, cfg.Plugin.Bucket)
		w.created["bucket/"+cfg.Plugin.Bucket] = true
	}
	w.mu.Unlock()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if opts.Catalog == nil {
		opts.Catalog = w.catalog
	}
	if opts.State == nil {
		// Built here rather than by app from the environment, so that tests
		// can run in parallel; cmd/poller's and cmd/lambda's tests cover
		// app's own client.
		opts.State = w.stateStore(cfg.Plugin.StateTable)
	}
	s, err := app.New(context.Background(), cfg, opts)
	if err != nil {
		w.t.Fatalf("sink: %v", err)
	}
	return s
}

// produce appends n JSON messages with headers to every partition of
// stream/topic (created with partitions partitions if missing).
func (w *world) produce(topic string, partitions, perPartition, size int) {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	key := w.stream + "/" + topic
	if _, ok := w.produced[key]; !ok {
		if !w.created["stream/"+w.stream] {
			if _, err := w.iggy.CreateStream(w.stream); err != nil {
				w.t.Fatal(err)
			}
			w.created["stream/"+w.stream] = true
		}
		if _, err := w.iggy.CreateTopic(w.stream, topic, partitions); err != nil {
			w.t.Fatal(err)
		}
		w.produced[key] = make([][]sent, partitions)
	}
	for p := 0; p < partitions; p++ {
		for i := 0; i < perPartition; i++ {
			n := len(w.produced[key][p])
			payload := jsonPayload(p, n, size)
			if w.payload != nil {
				payload = w.payload(p, n, size)
			}
			w.appendLocked(topic, uint32(p), payload, producedHeaders(n))
		}
	}
}

// producedHeaders are the user headers produce gives message n.
func producedHeaders(n int) []byte {
	return iggcon.GetHeadersBytes([]iggcon.HeaderEntry{
		{Key: iggcon.HeaderKey{Kind: iggcon.String, Value: []byte("content-type")}, Value: iggcon.HeaderValue{Kind: iggcon.String, Value: []byte("application/json")}},
		{Key: iggcon.HeaderKey{Kind: iggcon.String, Value: []byte("seq")}, Value: iggcon.HeaderValue{Kind: iggcon.Uint32, Value: []byte{byte(n), byte(n >> 8), 0, 0}}},
	})
}

// deleteTopic deletes a topic in Iggy; producing to it again re-creates it.
func (w *world) deleteTopic(topic string) {
	w.t.Helper()
	if err := w.iggy.DeleteTopic(w.stream, topic); err != nil {
		w.t.Fatal(err)
	}
	w.mu.Lock()
	delete(w.produced, w.stream+"/"+topic)
	w.mu.Unlock()
}

func (w *world) appendRaw(topic string, p uint32, payload, headers []byte) {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.appendLocked(topic, p, payload, headers)
}

func (w *world) appendLocked(topic string, p uint32, payload, headers []byte) {
	w.t.Helper()
	key := w.stream + "/" + topic
	off, err := w.iggy.Append(w.stream, topic, p, payload, headers)
	if err != nil {
		w.t.Fatal(err)
	}
	if int(off) != len(w.produced[key][p]) {
		w.t.Fatalf("broker gave offset %d, want %d", off, len(w.produced[key][p]))
	}
	w.produced[key][p] = append(w.produced[key][p], sent{payload: payload, headers: headers})
}

func jsonPayload(p, n, size int) []byte {
	b := fmt.Appendf(nil, `{"partition":%d,"n":%d,"level":"INFO","msg":"request served","path":"/api/items/%d","pad":"`, p, n, n)
	for len(b) < size-2 {
		b = append(b, byte('a'+(n+len(b))%26))
	}
	return append(b, `"}`...)
}

// drainUntilQuiet runs the sink until a run writes nothing and the group's
// offsets reach every partition's end, or fails after max runs.
func (w *world) drainUntilQuiet(s *app.Sink, topic string, max int) {
	w.t.Helper()
	for i := 0; i < max; i++ {
		sum, err := s.Run(context.Background())
		if err != nil {
			w.t.Logf("run %d: %v", i, err)
		}
		if os.Getenv("DRAIN_DEBUG") != "" {
			b, _ := json.Marshal(sum)
			w.t.Logf("run %d: %s", i, b)
		}
		if err == nil && sum.Objects == 0 && w.allCommitted(s, topic) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.t.Fatalf("not quiescent after %d runs", max)
}

func (w *world) allCommitted(s *app.Sink, topic string) bool {
	parts := w.sent(topic)
	for p := range parts {
		off, ok := w.iggy.GroupOffset(w.stream, topic, s.Config.Streams[0].ConsumerGroup, uint32(p))
		if len(parts[p]) > 0 && (!ok || off != uint64(len(parts[p])-1)) {
			return false
		}
	}
	return true
}

// record is one decoded record of a JSON-format object.
type record struct {
	Offset      uint64          `json:"offset"`
	Timestamp   string          `json:"timestamp"`
	Stream      string          `json:"stream"`
	Topic       string          `json:"topic"`
	PartitionID uint32          `json:"partition_id"`
	Headers     map[string]any  `json:"headers"`
	Payload     json.RawMessage `json:"payload"`
}

type object struct {
	key         string
	partition   uint32
	generation  uint32
	first, last uint64
	body        []byte // decompressed
	stored      int    // bytes in S3
}

// objects lists and decodes every data object under prefix.
func (w *world) objects(s *app.Sink, prefix string) []object {
	w.t.Helper()
	ctx := context.Background()
	var out []object
	voided := map[string]bool{}
	err := s.Objects.List(ctx, prefix, func(key string, _ int64) error {
		if k, ok := keys.Voided(key); ok {
			voided[k] = true
		}
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	err = s.Objects.List(ctx, prefix, func(key string, size int64) error {
		name := key[strings.LastIndexByte(key, '/')+1:]
		if strings.HasPrefix(name, "_") || voided[key] || isGenerationMarker(key) {
			return nil // a gap, void or generation marker, or a voided key
		}
		n, ok := keys.ParseName(key)
		if !ok {
			return fmt.Errorf("object name %q is not the sink's", key)
		}
		o := object{partition: n.Partition, generation: n.Generation, first: n.First, last: n.Last}
		body, err := s.Objects.Get(ctx, key)
		if err != nil {
			return err
		}
		o.key, o.stored = key, len(body)
		switch {
		case strings.HasSuffix(key, ".gz"):
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			body, err = io.ReadAll(zr)
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
		case strings.HasSuffix(key, ".zst"):
			zr, err := zstd.NewReader(bytes.NewReader(body))
			if err != nil {
				return err
			}
			body, err = io.ReadAll(zr)
			zr.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
		}
		o.body = body
		out = append(out, o)
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].partition != out[j].partition {
			return out[i].partition < out[j].partition
		}
		return out[i].first < out[j].first
	})
	return out
}

// decode splits a JSON-format object into its records.
func decode(t *testing.T, format string, o object) []record {
	t.Helper()
	var recs []record
	switch format {
	case "json_lines":
		if len(o.body) == 0 {
			return nil // every record of the range rejected (invalid_payload = "error_object")
		}
		if !bytes.HasSuffix(o.body, []byte("\n")) {
			t.Fatalf("%s: json_lines object does not end with a newline", o.key)
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(o.body, []byte("\n")), []byte("\n")) {
			var r record
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("%s: line %q: %v", o.key, line, err)
			}
			recs = append(recs, r)
		}
	case "json_array":
		if err := json.Unmarshal(o.body, &recs); err != nil {
			t.Fatalf("%s: %v", o.key, err)
		}
	default:
		t.Fatalf("decode: format %s", format)
	}
	return recs
}

// checkExactlyOnce decodes every object and checks that each produced
// message appears exactly once, in order, with its payload and headers.
func (w *world) checkExactlyOnce(s *app.Sink, topic, format string) []object {
	w.t.Helper()
	objs := w.objects(s, s.Config.Plugin.Prefix+"/")
	var gen uint32
	for _, o := range objs {
		gen = max(gen, o.generation)
	}
	return w.checkGeneration(objs, gen, w.sent(topic), topic, format)
}

// checkGeneration checks the objects of one generation of topic against
// the messages produced to that incarnation.
func (w *world) checkGeneration(all []object, gen uint32, parts [][]sent, topic, format string) []object {
	w.t.Helper()
	var objs []object
	for _, o := range all {
		if o.generation == gen {
			objs = append(objs, o)
		}
	}
	next := make([]uint64, len(parts))
	for _, o := range objs {
		p := o.partition
		if o.first != next[p] {
			w.t.Fatalf("%s: starts at %d, want %d (gap or overlap)", o.key, o.first, next[p])
		}
		if format == "raw" {
			var want []byte
			for off := o.first; off <= o.last; off++ {
				want = append(want, parts[p][off].payload...)
			}
			if !bytes.Equal(o.body, want) {
				w.t.Fatalf("%s: raw bytes differ from the payloads of %d..%d", o.key, o.first, o.last)
			}
			next[p] = o.last + 1
			continue
		}
		for _, r := range decode(w.t, format, o) {
			if r.Offset != next[p] || r.PartitionID != p || r.Stream != w.stream || r.Topic != topic {
				w.t.Fatalf("%s: record offset %d partition %d (%s/%s), want offset %d partition %d", o.key, r.Offset, r.PartitionID, r.Stream, r.Topic, next[p], p)
			}
			if !bytes.Equal(r.Payload, parts[p][r.Offset].payload) {
				w.t.Fatalf("%s offset %d: payload %s, want %s", o.key, r.Offset, r.Payload, parts[p][r.Offset].payload)
			}
			if r.Headers["content-type"] != "application/json" || r.Headers["seq"] != float64(r.Offset%65536) {
				w.t.Fatalf("%s offset %d: headers %v", o.key, r.Offset, r.Headers)
			}
			next[p]++
		}
		if next[p] != o.last+1 {
			w.t.Fatalf("%s: name says ..%d but records end at %d", o.key, o.last, next[p]-1)
		}
	}
	for p := range parts {
		if next[p] != uint64(len(parts[p])) {
			w.t.Fatalf("partition %d: objects hold %d messages, produced %d", p, next[p], len(parts[p]))
		}
	}
	return objs
}

// auditClean runs the audit and fails the test on any finding.
func (w *world) auditClean(s *app.Sink) []audit.Report {
	w.t.Helper()
	var buf bytes.Buffer
	reports, err := ops.NewAuditor(s, slog.New(slog.DiscardHandler)).Audit(context.Background(), ops.AuditOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	_ = audit.Write(&buf, reports)
	for _, r := range reports {
		if !r.OK() {
			w.t.Fatalf("audit:\n%s", buf.String())
		}
	}
	w.tablesClean(s, reports)
	return reports
}

func (w *world) assertNoSecrets() {
	logs := w.logs.String()
	secrets := []string{w.password, "moto-secret"}
	if w.s3 != nil {
		secrets = append(secrets, w.s3.SecretKey)
	}
	for _, secret := range secrets {
		if len(secret) >= 8 && strings.Contains(logs, secret) {
			w.t.Errorf("a secret appears in the logs")
		}
	}
}

// assertReadAheadGivenBack fails the test when a run of the world ended
// with a partition keeping the run's read-ahead slot, whatever the test
// did to it (crashes, faults, moved partitions).
func (w *world) assertReadAheadGivenBack() {
	if strings.Contains(w.logs.String(), readAheadKept) {
		w.t.Errorf("a run ended with its read-ahead slot kept by a partition (%q in the logs)", readAheadKept)
	}
}

func assertNoSecretIn(t *testing.T, what string, err error, secrets ...string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range secrets {
		// A short password such as a real test server's "iggy" is also a
		// word of every message; only distinctive secrets can be looked for.
		if len(s) >= 8 && strings.Contains(err.Error(), s) {
			t.Errorf("%s: error %q contains a secret", what, err)
		}
	}
}

// recordingStore wraps the uploader and remembers the hash of every body
// written per key, to prove no key is ever written with two contents.
type recordingStore struct {
	app.ObjectStore
	mu     sync.Mutex
	hashes map[string]map[[32]byte]int
}

func newRecordingStore(inner app.ObjectStore) *recordingStore {
	return &recordingStore{ObjectStore: inner, hashes: map[string]map[[32]byte]int{}}
}

func (r *recordingStore) note(key string, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hashes[key] == nil {
		r.hashes[key] = map[[32]byte]int{}
	}
	r.hashes[key][sha256.Sum256(body)]++
}

func (r *recordingStore) Put(ctx context.Context, obj s3store.Object, body []byte) (s3store.Result, error) {
	res, err := r.ObjectStore.Put(ctx, obj, body)
	if err == nil {
		r.note(obj.Key, body)
	}
	return res, err
}

func (r *recordingStore) Stream(ctx context.Context, obj s3store.Object, write func(io.Writer) error) (s3store.Result, error) {
	var all bytes.Buffer
	res, err := r.ObjectStore.Stream(ctx, obj, func(w io.Writer) error { return write(io.MultiWriter(w, &all)) })
	if err == nil {
		r.note(obj.Key, all.Bytes())
	}
	return res, err
}

// conflicting lists keys written with more than one distinct content.
func (r *recordingStore) conflicting() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var keys []string
	for k, hs := range r.hashes {
		if len(hs) > 1 {
			keys = append(keys, k)
		}
	}
	return keys
}

// stepFunc is a drain.StepHook made of a function (crash tests).
type stepFunc func(drain.Step, batch.Partition) error

func (f stepFunc) OnStep(s drain.Step, p batch.Partition) error { return f(s, p) }

// crashAt returns hooks that crash a run at step.
func crashAt(f func(drain.Step, batch.Partition) error) []drain.Hook {
	return []drain.Hook{stepFunc(f)}
}

// nthCrash aborts a run at the nth time it reaches step, once.
type nthCrash struct {
	step    drain.Step
	nth     int64
	hits    atomic.Int64
	crashed atomic.Bool
}

// crashAtNth is a crash at the nth time a run reaches step (the hook
// point crashAt takes).
func crashAtNth(step drain.Step, nth int) *nthCrash { return &nthCrash{step: step, nth: int64(nth)} }

func (c *nthCrash) hook(s drain.Step, _ batch.Partition) error {
	if s != c.step || c.crashed.Load() {
		return nil
	}
	if c.hits.Add(1) == c.nth {
		c.crashed.Store(true)
		return errors.New("injected")
	}
	return nil
}

// dynamoEndpoint is the DynamoDB the sinks use: a proxy, minidyn or moto.
func (w *world) dynamoEndpoint() string {
	if w.dynamoURL != "" {
		return w.dynamoURL
	}
	return w.moto.Endpoint
}

// dynamoClient is a DynamoDB client of the world's DynamoDB.
func (w *world) dynamoClient() *dynamodb.Client { return dynamoClientAt(w.dynamoEndpoint()) }

func dynamoClientAt(endpoint string) *dynamodb.Client {
	// minidyn sends no CRC32 header; the SDK would warn on every reply.
	return dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), DisableValidateResponseChecksum: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test-secret", ""), Logger: logging.Nop{}})
}

// stateStore is the state store the world's sinks use, on table.
func (w *world) stateStore(table string) *state.Dynamo {
	w.t.Helper()
	store := state.NewDynamo(w.dynamoClient(), table, nil)
	if err := store.EnsureTable(context.Background()); err != nil {
		w.t.Fatal(err)
	}
	return store
}

// sent returns what was produced to the current incarnation of topic.
func (w *world) sent(topic string) [][]sent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.produced[w.stream+"/"+topic]
}
