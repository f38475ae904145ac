package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/fanout"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/cpulimit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// s3Recorder is a reverse proxy in front of the S3 server that records
// every object write it forwards: which invocation wrote which key, when.
// Each emulator gets its own, so the record says who wrote what without
// trusting what the function reports about itself.
type s3Recorder struct {
	name  string
	srv   *httptest.Server
	mu    sync.Mutex
	puts  []objectWrite
	proxy *httputil.ReverseProxy
}

type objectWrite struct {
	instance   string
	key        string
	start, end time.Time
	status     int
}

func newS3Recorder(t *testing.T, name, target string) *s3Recorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	r := &s3Recorder{name: name, proxy: httputil.NewSingleHostReverseProxy(u)}
	// The proxy keeps the client's Host header, which its signature covers.
	r.srv = httptest.NewServer(r)
	t.Cleanup(r.srv.Close)
	return r
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) { w.status = code; w.ResponseWriter.WriteHeader(code) }

func (r *s3Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	r.proxy.ServeHTTP(sw, req)
	// A PutObject, or the completion of a multipart upload, writes an object.
	write := req.Method == http.MethodPut && req.URL.Query().Get("partNumber") == "" ||
		req.Method == http.MethodPost && req.URL.Query().Has("uploadId")
	if !write {
		return
	}
	key := strings.TrimPrefix(req.URL.Path, "/")
	_, key, _ = strings.Cut(key, "/") // path style: /bucket/key
	r.mu.Lock()
	r.puts = append(r.puts, objectWrite{instance: r.name, key: key, start: start, end: time.Now(), status: sw.status})
	r.mu.Unlock()
}

func (r *s3Recorder) writes() []objectWrite {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.puts)
}

// lambdaRouter stands in for the Lambda service's Invoke API: an
// asynchronous invocation (X-Amz-Invocation-Type: Event) is accepted with
// 202 and then run on the next free emulator, as Lambda runs queued events
// as concurrency allows.
type lambdaRouter struct {
	t        *testing.T
	function string
	srv      *httptest.Server
	free     chan *emulator
	wg       sync.WaitGroup
	mu       sync.Mutex
	results  []routed
	refusals []string
}

type routed struct {
	emu        *emulator
	payload    []byte
	body       []byte
	err        error
	start, end time.Time
}

var invokePath = regexp.MustCompile(`^/2015-03-31/functions/([^/]+)/invocations$`)

// newLambdaRouter serves Invoke for function; add emulators with r.free <- e.
func newLambdaRouter(t *testing.T, function string) *lambdaRouter {
	r := &lambdaRouter{t: t, function: function, free: make(chan *emulator, 16)}
	r.srv = httptest.NewServer(r)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *lambdaRouter) refuse(w http.ResponseWriter, status int, code, msg string) {
	r.mu.Lock()
	r.refusals = append(r.refusals, msg)
	r.mu.Unlock()
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"Type":"User","message":%q}`, msg)
}

func (r *lambdaRouter) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	m := invokePath.FindStringSubmatch(req.URL.Path)
	switch {
	case req.Method != http.MethodPost || m == nil:
		r.refuse(w, http.StatusNotFound, "ResourceNotFoundException", req.Method+" "+req.URL.Path+": not an Invoke call")
		return
	case m[1] != r.function:
		r.refuse(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+m[1])
		return
	case req.Header.Get("X-Amz-Invocation-Type") != "Event":
		r.refuse(w, http.StatusBadRequest, "InvalidParameterValueException", "only asynchronous (Event) invocations are expected, got "+req.Header.Get("X-Amz-Invocation-Type"))
		return
	case !strings.HasPrefix(req.Header.Get("Authorization"), "AWS4-HMAC-SHA256 "):
		r.refuse(w, http.StatusForbidden, "AccessDeniedException", "unsigned request")
		return
	}
	payload, err := io.ReadAll(req.Body)
	if err != nil {
		r.refuse(w, http.StatusBadRequest, "InvalidRequestContentException", err.Error())
		return
	}
	r.wg.Add(1)
	w.WriteHeader(http.StatusAccepted)
	go func() {
		defer r.wg.Done()
		emu := <-r.free
		res := routed{emu: emu, payload: payload, start: time.Now()}
		res.body, res.err = emu.post(payload, 2*time.Minute)
		res.end = time.Now()
		r.free <- emu
		r.mu.Lock()
		r.results = append(r.results, res)
		r.mu.Unlock()
	}()
}

// post is invoke without t, for goroutines.
func (e *emulator) post(payload []byte, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(payload))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
	}
	return body, err
}

// fanOutStand is a broker with 16 partitions of messages whose payloads
// name their partition and index, versitygw, and moto with the state table.
type fanOutStand struct {
	broker       *iggytest.Broker
	s3           *testenv.S3
	moto         *testenv.Moto
	partitions   int
	perPartition int
}

func newFanOutStand(t *testing.T, partitions, perPartition int) *fanOutStand {
	t.Helper()
	b, err := iggytest.Start(iggytest.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if _, err := b.CreateStream("app"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTopic("app", "logs", partitions); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 180)
	for p := range partitions {
		for i := range perPartition {
			payload := fmt.Sprintf(`{"p":%d,"i":%d,"pad":%q}`, p, i, pad)
			if _, err := b.Append("app", "logs", uint32(p), []byte(payload), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	s3srv := testenv.StartVersity(t)
	s3srv.CreateBucket(t, "fanout")
	moto := testenv.StartMoto(t)
	if err := state.NewDynamo(moto.DynamoClient(t), "sink-state", nil).EnsureTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &fanOutStand{broker: b, s3: s3srv, moto: moto, partitions: partitions, perPartition: perPartition}
}

// env is the function's environment: one consumer group and prefix per
// scenario, S3 through s3Endpoint, Lambda at lambdaEndpoint.
func (st *fanOutStand) env(group, s3Endpoint, lambdaEndpoint string, maxWorkers int) []string {
	return []string{
		"AWS_LAMBDA_FUNCTION_NAME=iggy-s3-sink", "AWS_LAMBDA_FUNCTION_TIMEOUT=120", "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=" + st.s3.AccessKey, "AWS_SECRET_ACCESS_KEY=" + st.s3.SecretKey, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_S3=" + s3Endpoint, "AWS_ENDPOINT_URL_DYNAMODB=" + st.moto.Endpoint, "AWS_ENDPOINT_URL_LAMBDA=" + lambdaEndpoint,
		"SINK_BUCKET=fanout", "SINK_PREFIX=" + group, "SINK_STREAM=app", "SINK_TOPICS=logs",
		"SINK_CONSUMER_GROUP=" + group, "SINK_STATE_TABLE=sink-state",
		"SINK_FILE_ROTATION=messages", "SINK_MAX_MESSAGES_PER_FILE=500", "SINK_MAX_FILE_AGE=1ms",
		fmt.Sprintf("SINK_MAX_WORKERS=%d", maxWorkers),
		// Deliberately low: one worker looks too slow for the lag, so the
		// tick wants every worker it may have (3).
		"SINK_WORKER_RATE=50", "SINK_SETTLE_TIMEOUT=5s",
		// Lambda shows a function 2 vCPUs below 3008 MB; its quota is the cgroup's.
		"GOMAXPROCS=2", fmt.Sprintf("AWS_LAMBDA_FUNCTION_MEMORY_SIZE=%d", emulatedMemoryMB),
		"IGGY_ADDRESS=" + st.broker.Addr(),
	}
}

// record is one line of an object, as a user's reader sees it.
type record struct {
	Offset    uint64 `json:"offset"`
	Partition uint32 `json:"partition_id"`
	Payload   struct {
		P uint32 `json:"p"`
		I uint64 `json:"i"`
	} `json:"payload"`
}

// verifyArchive reads every object under prefix and checks, independently
// of the sink, that each message of each partition is there exactly once,
// where its offset says, with its own payload.
func (st *fanOutStand) verifyArchive(t *testing.T, prefix string) int {
	t.Helper()
	client := st.s3.Client(t)
	ctx := context.Background()
	seen := map[[2]uint64]int{}
	objects := 0
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String("fanout"), Prefix: aws.String(prefix + "/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			if strings.Contains(*o.Key, "/_generations/") {
				continue // generation and name markers
			}
			objects++
			got, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("fanout"), Key: o.Key})
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(got.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				var r record
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatalf("%s: %v: %s", *o.Key, err, sc.Bytes())
				}
				if r.Payload.P != r.Partition || r.Payload.I != r.Offset {
					t.Fatalf("%s: record at partition %d offset %d carries the payload of partition %d message %d", *o.Key, r.Partition, r.Offset, r.Payload.P, r.Payload.I)
				}
				seen[[2]uint64{uint64(r.Partition), r.Offset}]++
			}
			got.Body.Close()
		}
	}
	for part := range st.partitions {
		for off := range st.perPartition {
			if n := seen[[2]uint64{uint64(part), uint64(off)}]; n != 1 {
				t.Fatalf("partition %d offset %d is in %d records, want exactly 1", part, off, n)
			}
		}
	}
	if len(seen) != st.partitions*st.perPartition {
		t.Fatalf("the archive holds %d distinct messages, want %d", len(seen), st.partitions*st.perPartition)
	}
	return objects
}

// TestFanOutUnderEmulator runs the real bootstrap under three emulators
// over 16 partitions with max_workers 3: the scheduled invocation sizes a
// cohort of 3 from the lag, starts two workers through the Lambda Invoke
// API (a router in front of the other two emulators), and the three drain
// the topic together. Every partition must be written by exactly one
// invocation, and every message must be in the archive exactly once, read
// back independently. A single invocation drains the same messages for a
// second consumer group first, for the rate comparison.
func TestFanOutUnderEmulator(t *testing.T) {
	testenv.RequireTool(t, "aws-lambda-rie")
	const partitions, perPartition = 16, 3000
	st := newFanOutStand(t, partitions, perPartition)
	bootstrap := buildBootstrap(t)
	limit := newLambdaCPU(t, emulatedMemoryMB)

	// One worker alone: today's behaviour (max_workers 1).
	single := startEmulatorIn(t, limit(), bootstrap, st.env("single", st.s3.Endpoint, "http://127.0.0.1:1", 1))
	began := time.Now()
	var one fanout.Result
	if err := json.Unmarshal(single.invoke(t, []byte(`{}`), 2*time.Minute), &one); err != nil || one.Summary == nil {
		t.Fatalf("single invocation: %v", err)
	}
	singleWall := time.Since(began)
	if one.FanOut != nil || one.Messages != partitions*perPartition {
		t.Fatalf("single invocation drained %d messages (fan-out %+v), want all %d and no fan-out", one.Messages, one.FanOut, partitions*perPartition)
	}
	st.verifyArchive(t, "single")

	// Three invocations: the tick on the first emulator, workers on the others.
	recorders := make([]*s3Recorder, 3)
	emus := make([]*emulator, 3)
	router := newLambdaRouter(t, "iggy-s3-sink")
	for i := range emus {
		recorders[i] = newS3Recorder(t, fmt.Sprintf("invocation-%d", i), st.s3.Endpoint)
		emus[i] = startEmulatorIn(t, limit(), bootstrap, st.env("cohort", recorders[i].srv.URL, router.srv.URL, 3))
	}
	router.free <- emus[1]
	router.free <- emus[2]
	began = time.Now()
	var tick fanout.Result
	body := emus[0].invoke(t, []byte(`{"version":"0","detail-type":"Scheduled Event","source":"aws.events"}`), 2*time.Minute)
	if err := json.Unmarshal(body, &tick); err != nil || tick.Summary == nil || tick.FanOut == nil {
		t.Fatalf("tick result: %v: %s", err, body)
	}
	waitRouted(t, router, 2*time.Minute)
	cohortWall := time.Since(began)

	fo := tick.FanOut
	if fo.Role != "coordinator" || fo.Plan == nil || fo.Plan.Workers != 3 || fo.Started != 2 || fo.Gathered != 3 || len(fo.StartErrors) != 0 {
		t.Fatalf("tick fan-out: %+v (plan %+v)", fo, fo.Plan)
	}
	if len(router.refusals) != 0 || len(router.results) != 2 {
		t.Fatalf("router: %d invocations run, refusals %v", len(router.results), router.refusals)
	}
	results := []fanout.Result{tick}
	for _, r := range router.results {
		var res fanout.Result
		if r.err != nil || json.Unmarshal(r.body, &res) != nil || res.FanOut == nil || res.FanOut.Role != "worker" || res.FanOut.Cohort != fo.Cohort {
			t.Fatalf("worker invocation: %v: %s", r.err, r.body)
		}
		results = append(results, res)
	}
	var total uint64
	for i, res := range results {
		total += res.Messages
		if len(res.FanOut.Settled) != 1 || res.FanOut.Settled[0].Late || res.FanOut.Settled[0].TimedOut || res.FanOut.Settled[0].Members != 3 {
			t.Fatalf("invocation %d settled as %+v", i, res.FanOut.Settled)
		}
		counts := slices.Clone(res.FanOut.Settled[0].Partitions)
		slices.Sort(counts)
		if !slices.Equal(counts, []int{5, 5, 6}) {
			t.Errorf("invocation %d saw %v partitions per member once settled, want 5, 5, 6", i, counts)
		}
	}
	if total != partitions*perPartition {
		t.Fatalf("the cohort drained %d messages, want %d", total, partitions*perPartition)
	}

	// Who wrote what, as the S3 proxies saw it.
	writers := map[uint32]map[string]bool{}
	var writes []objectWrite
	for _, r := range recorders {
		for _, w := range r.writes() {
			if !strings.Contains(w.key, "/"+keys.GenerationsFolder+"/") || w.status != http.StatusOK {
				writes = append(writes, w) // not a partition's generation or name marker
			}
		}
	}
	for _, w := range writes {
		n, ok := keys.ParseName(w.key)
		if !ok || w.status != http.StatusOK {
			t.Fatalf("unexpected write %+v", w)
		}
		if writers[n.Partition] == nil {
			writers[n.Partition] = map[string]bool{}
		}
		writers[n.Partition][w.instance] = true
	}
	perInstance := map[string]int{}
	for p := range uint32(partitions) {
		if len(writers[p]) != 1 {
			t.Errorf("partition %d written by %v, want exactly one invocation", p, writers[p])
		}
		for inst := range writers[p] {
			perInstance[inst]++
		}
	}
	objects := st.verifyArchive(t, "cohort")
	if objects != len(writes) {
		t.Fatalf("the archive holds %d objects, the proxies forwarded %d writes", objects, len(writes))
	}

	singleRate := float64(one.Messages) / singleWall.Seconds()
	cohortRate := float64(total) / cohortWall.Seconds()
	var settle, runs []int64
	for _, res := range results {
		settle = append(settle, res.FanOut.Settled[0].WaitMS)
		runs = append(runs, res.DurationMS)
	}
	t.Logf("one invocation: %d messages in %v (run %d ms): %.0f messages/s", one.Messages, singleWall.Round(time.Millisecond), one.DurationMS, singleRate)
	t.Logf("cohort of 3: %d messages in %v from the tick to the last worker's end: %.0f messages/s, %.2fx one invocation (%s)",
		total, cohortWall.Round(time.Millisecond), cohortRate, cohortRate/singleRate, limitNote)
	t.Logf("partitions per invocation %v; runs %v ms, of which settle waits %v ms; the anchor left %d ms after the tick began; %d objects",
		sortedCounts(perInstance), runs, settle, fo.GatherMS, objects)
	for _, g := range limitGroups {
		n, _ := g.Throttled()
		t.Logf("%s: throttled %d times", g, n)
	}
	if !emus[0].logged(`"WorkersStarted":2`) {
		t.Fatalf("the tick wrote no WorkersStarted metric:\n%s", emus[0].output.String())
	}

	// A second tick: nothing left, so one invocation and no workers.
	var again fanout.Result
	if err := json.Unmarshal(emus[0].invoke(t, []byte(`{}`), time.Minute), &again); err != nil || again.FanOut == nil || again.FanOut.Plan == nil ||
		again.FanOut.Plan.Workers != 1 || again.FanOut.Started != 0 || again.Messages != 0 {
		t.Fatalf("second tick: %v %+v", err, again.FanOut)
	}
}

// emulatedMemoryMB is the function memory the fan-out test emulates: each
// invocation (emulator and bootstrap) gets LambdaShare(128) = 0.072 CPU
// when cgroups can be used, so that three invocations have three times
// one's CPU, as on Lambda.
const emulatedMemoryMB = 128

// limitNote says how the last newLambdaCPU limited CPU, for the log.
var limitNote = "no CPU limit"

// limitGroups are the groups newLambdaCPU made, for their throttle counts.
var limitGroups []*cpulimit.Group

// newLambdaCPU returns a maker of CPU-limited groups, one per invocation,
// removed when the test ends (after the emulators stop); it makes nil
// groups where cgroups cannot be used.
func newLambdaCPU(t *testing.T, memoryMB int) func() *cpulimit.Group {
	n := 0
	return func() *cpulimit.Group {
		n++
		g, err := cpulimit.New(fmt.Sprintf("iggy-sink-test-%d-%d", os.Getpid(), n), cpulimit.LambdaShare(memoryMB))
		if err != nil {
			limitNote = "no CPU limit: " + err.Error() + "; every invocation shares the machine's cores"
			return nil
		}
		limitNote = fmt.Sprintf("each invocation in its own cgroup at %.2f CPU, the share of a %d MB function", g.Share, memoryMB)
		t.Cleanup(func() { g.Close() })
		limitGroups = append(limitGroups, g)
		return g
	}
}

func waitRouted(t *testing.T, r *lambdaRouter, timeout time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("worker invocations still running after %v", timeout)
	}
}

func sortedCounts(m map[string]int) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(out)
	return out
}
