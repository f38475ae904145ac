package drain_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/s3fake"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// TestModel plays seeded random schedules against the in-process world:
// rounds of 2–4 concurrent runs over 1–8 partitions, with runs killed at
// any step, stalled past their lease, cut by a deadline; S3 and DynamoDB
// replies lost (applied, then an error) or requests failed (not applied);
// retention deleting messages; the format, compression and rotation
// changing between rounds; the topic deleted and re-created. Each schedule
// then runs to quiescence and must hold the guarantee: every offset of every
// partition in exactly one object or gap marker, per incarnation, with the
// right payload, and a clean audit.
//
// MODEL_SEEDS=n runs seeds 1..n (default 300); MODEL_SEED=s runs seed s
// alone. A failing seed prints the command that replays it.
func TestModel(t *testing.T) {
	if os.Getenv("IGGY_TEST_ADDRESS") != "" {
		t.Skip("needs the in-repo broker's retention and connection hooks; IGGY_TEST_ADDRESS points at a real server")
	}
	seeds := modelSeeds(t)
	for _, seed := range seeds {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("replay: MODEL_SEED=%d go test -race -run 'TestModel/^%d$' ./internal/drain", seed, seed)
				}
			})
			newModel(t, seed).play()
		})
	}
}

func modelSeeds(t *testing.T) []uint64 {
	if s := os.Getenv("MODEL_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("MODEL_SEED=%q: %v", s, err)
		}
		return []uint64{seed}
	}
	n := 300
	if s := os.Getenv("MODEL_SEEDS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("MODEL_SEEDS=%q: want a positive count", s)
		}
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

// model is one schedule's world and what it expects.
type model struct {
	t     *testing.T
	seed  uint64
	rng   *rand.Rand
	w     *world
	topic string
	parts int
	set   map[string]string
	keep  int64
	ddb   *dynamoProxy
	// retired holds what each earlier incarnation of the topic received;
	// deletedBelow[p] is where retention cut partition p (this incarnation).
	retired      [][][]sent
	deletedBelow []uint64
	log          []string // what the schedule did, printed on failure
}

const modelLease = time.Second // config.MinLeaseDuration

func newModel(t *testing.T, seed uint64) *model {
	w := newWorld(t)
	w.backend = "inproc"
	backends[0].start(t, w)
	m := &model{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x5eed)), w: w, topic: "model"}
	m.parts = 1 + m.rng.IntN(8)
	m.deletedBelow = make([]uint64, m.parts)
	m.ddb = newDynamoProxy(t, w.dynamoURL, seed)
	w.dynamoURL = m.ddb.url
	m.set = w.settings(fmt.Sprintf("model-%d", seed), m.topic)
	m.set["SINK_LEASE_DURATION"] = modelLease.String()
	m.set["SINK_DEADLINE_MARGIN"] = "20ms"
	m.set["SINK_BATCH_LENGTH"] = strconv.Itoa(5 + m.rng.IntN(40))
	m.set["SINK_MAX_ATTEMPTS"] = "3"
	m.reconfigure()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("schedule:\n  %s", strings.Join(m.log, "\n  "))
			if os.Getenv("MODEL_DEBUG") != "" {
				t.Logf("logs:\n%s", m.w.logs.String())
			}
		}
	})
	return m
}

func (m *model) note(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf(format, args...))
}

// reconfigure draws a format, compression and rotation for the next runs.
func (m *model) reconfigure() {
	m.set["SINK_OUTPUT_FORMAT"] = []string{"json_lines", "json_array", "raw", "parquet"}[m.rng.IntN(4)]
	m.set["SINK_COMPRESSION"] = []string{"none", "gzip", "zstd"}[m.rng.IntN(3)]
	delete(m.set, "SINK_PARQUET_COMPRESSION")
	if m.set["SINK_OUTPUT_FORMAT"] == "parquet" {
		// A Parquet file compresses its own pages.
		m.set["SINK_COMPRESSION"] = "none"
		m.set["SINK_PARQUET_COMPRESSION"] = []string{"zstd", "snappy", "gzip", "none"}[m.rng.IntN(4)]
	}
	if m.rng.IntN(2) == 0 {
		m.set["SINK_FILE_ROTATION"], m.set["SINK_MAX_MESSAGES_PER_FILE"] = "messages", strconv.Itoa(3+m.rng.IntN(40))
		delete(m.set, "SINK_MAX_FILE_SIZE")
	} else {
		m.set["SINK_FILE_ROTATION"], m.set["SINK_MAX_FILE_SIZE"] = "size", strconv.Itoa(1000+m.rng.IntN(8000))+"B"
		delete(m.set, "SINK_MAX_MESSAGES_PER_FILE")
	}
	m.keep = 0
	if m.rng.IntN(3) == 0 {
		m.keep = 512 // objects above it are re-read from Iggy and streamed
	}
	m.note("config %s/%s%s %s keep=%d", m.set["SINK_OUTPUT_FORMAT"], m.set["SINK_COMPRESSION"], m.set["SINK_PARQUET_COMPRESSION"], m.rotation(), m.keep)
}

func (m *model) rotation() string {
	if m.set["SINK_FILE_ROTATION"] == "messages" {
		return m.set["SINK_MAX_MESSAGES_PER_FILE"] + " messages"
	}
	return m.set["SINK_MAX_FILE_SIZE"]
}

func (m *model) play() {
	rounds := 2 + m.rng.IntN(4)
	for r := 0; r < rounds; r++ {
		m.change(r)
		m.round(r)
	}
	m.quiesce()
	m.verify()
}

// change mutates the world between rounds: traffic, retention, a new
// configuration, a re-created topic.
func (m *model) change(round int) {
	if round > 0 && m.rng.IntN(12) == 0 {
		m.retired = append(m.retired, m.w.sent(m.topic))
		m.w.deleteTopic(m.topic)
		m.deletedBelow = make([]uint64, m.parts)
		m.note("round %d: topic deleted and re-created", round)
	}
	n := 1 + m.rng.IntN(40)
	m.w.produce(m.topic, m.parts, n, 40+m.rng.IntN(200))
	m.note("round %d: %d messages into each of %d partitions", round, n, m.parts)
	if round > 0 && m.rng.IntN(3) == 0 {
		m.reconfigure()
	}
	if m.rng.IntN(3) == 0 {
		p := m.rng.IntN(m.parts)
		high := uint64(len(m.w.sent(m.topic)[p]))
		// Retention never takes the newest message: a gap shows only when
		// a message after it arrives.
		if cut := uint64(m.rng.Int64N(int64(high))); cut > m.deletedBelow[p] {
			if err := m.w.broker.DeleteBelow(m.w.stream, m.topic, uint32(p), cut); err != nil {
				m.t.Fatal(err)
			}
			m.deletedBelow[p] = cut
			m.note("round %d: retention deleted partition %d below %d", round, p, cut)
		}
	}
}

// round runs 2–4 sinks at once, each with its own faults.
func (m *model) round(r int) {
	k := 2 + m.rng.IntN(3)
	rates := [2]int{m.rng.IntN(8), m.rng.IntN(8)} // percent of S3 and DynamoDB requests that go wrong
	m.w.fakeS3.SetFault(m.s3Faults(rates[0]))
	m.ddb.setRate(rates[1])
	m.note("round %d: %d runs, S3 faults %d%%, DynamoDB faults %d%%", r, k, rates[0], rates[1])
	var wg sync.WaitGroup
	for i := 0; i < k; i++ {
		hooks, timeout, what := m.runFaults()
		m.note("  run %d: %s", i, what)
		s := m.w.sink(m.w.config(m.set), app.Options{Hooks: hooks, KeepLimit: m.keep})
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			if timeout > 0 {
				ctx, cancel = context.WithTimeout(context.Background(), timeout)
			}
			defer cancel()
			sum, err := s.Run(ctx) // failures are the point; the checks come at the end
			if os.Getenv("MODEL_DEBUG") != "" {
				m.debugRun(r, i, sum, err)
			}
		})
	}
	wg.Wait()
	if os.Getenv("MODEL_DEBUG") != "" {
		st := m.w.stateStore(m.set["SINK_STATE_TABLE"])
		for p := 0; p < m.parts; p++ {
			got, _, _ := st.Get(context.Background(), state.Key{Group: m.set["SINK_CONSUMER_GROUP"], Stream: m.w.stream, Topic: m.topic, Partition: uint32(p)})
			m.note("  after round %d, %s: state p%d owner %q expires %s version %d written %v/%d intent %+v", r, time.Now().Format("15:04:05.000"), p, got.Owner, got.LeaseExpires.Format("15:04:05.000"), got.Version, got.HasWritten, got.LastWritten, got.Intent)
		}
	}
}

var debugMu sync.Mutex

func (m *model) debugRun(round, run int, sum *drain.Summary, err error) {
	debugMu.Lock()
	defer debugMu.Unlock()
	m.note("round %d run %d ended: %v", round, run, err)
	for _, p := range sum.Partitions {
		m.note("    p%d objects %d %v..%v committed %v gen %d recreated %v recovered %v skipped %q stopped %q error %q gaps %v",
			p.Partition, p.Objects, deref(p.FirstOffset), deref(p.LastOffset), deref(p.Committed), p.Generation, p.Recreated, p.Recovered, p.Skipped, p.Stopped, p.Error, p.Gaps)
	}
}

func deref(p *uint64) any {
	if p == nil {
		return "-"
	}
	return *p
}

// runFaults draws what goes wrong in one run: a kill at some step, a stall
// past the lease, a deadline; or nothing.
func (m *model) runFaults() ([]drain.Hook, time.Duration, string) {
	step := drain.Steps[m.rng.IntN(len(drain.Steps))]
	nth := int64(1 + m.rng.IntN(4))
	switch m.rng.IntN(5) {
	case 0:
		var hits, done countOnce
		return crashAt(func(s drain.Step, _ batch.Partition) error {
			if s == step && hits.add() == nth && done.first() {
				return errors.New("killed")
			}
			return nil
		}), 0, fmt.Sprintf("killed at %s #%d", step, nth)
	case 1:
		var hits, done countOnce
		return crashAt(func(s drain.Step, _ batch.Partition) error {
			if s == step && hits.add() == nth && done.first() {
				time.Sleep(modelLease + 150*time.Millisecond)
			}
			return nil
		}), 0, fmt.Sprintf("stalled past its lease at %s #%d", step, nth)
	case 2:
		d := time.Duration(20+m.rng.IntN(300)) * time.Millisecond
		return nil, d, fmt.Sprintf("deadline %s", d)
	}
	return nil, 0, "no fault"
}

// countOnce counts calls from several goroutines.
type countOnce struct {
	mu sync.Mutex
	n  int64
}

func (c *countOnce) add() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

func (c *countOnce) first() bool { return c.add() == 1 }

// s3Faults loses the reply of, or fails, rate% of the writes.
func (m *model) s3Faults(rate int) func(s3fake.Op, string) s3fake.Fault {
	rng := rand.New(rand.NewPCG(m.rng.Uint64(), 1))
	var mu sync.Mutex
	return func(op s3fake.Op, _ string) s3fake.Fault {
		if op != s3fake.OpPut && op != s3fake.OpComplete && op != s3fake.OpPart {
			return s3fake.Pass
		}
		mu.Lock()
		defer mu.Unlock()
		switch n := rng.IntN(100); {
		case n < rate/2:
			return s3fake.LoseReply
		case n < rate:
			return s3fake.Fail
		}
		return s3fake.Pass
	}
}

// quiesce runs one healthy sink until a run writes nothing and the group
// has committed every message.
func (m *model) quiesce() {
	m.w.fakeS3.SetFault(nil)
	m.ddb.setRate(0)
	s := m.w.sink(m.w.config(m.set), app.Options{})
	for i := 0; i < 60; i++ {
		sum, err := s.Run(context.Background())
		if err == nil && sum.Objects == 0 && len(sum.Partitions[0].Gaps) == 0 && m.w.allCommitted(s, m.topic) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	m.t.Fatalf("seed %d: not quiescent after 60 healthy runs", m.seed)
}

// verify checks every generation: objects and gap markers cover offsets
// 0..end exactly once, every record holds its message, gaps only where
// retention deleted, and the audit is clean.
func (m *model) verify() {
	s := m.w.sink(m.w.config(m.set), app.Options{})
	cov := m.coverage(s)
	incarnations := append(append([][][]sent{}, m.retired...), m.w.sent(m.topic))
	for p := 0; p < m.parts; p++ {
		m.checkGenerations(cov, incarnations, p)
	}
	reports := m.w.auditClean(s)
	objects, gaps, voided := 0, 0, 0
	for _, r := range reports {
		objects, gaps, voided = objects+r.Objects, gaps+r.GapMarkers, voided+r.Voided
	}
	m.t.Logf("seed %d: %d objects, %d gap markers, %d voided keys, %d incarnations; schedule:\n  %s",
		m.seed, objects, gaps, voided, len(incarnations), strings.Join(m.log, "\n  "))
}

type genPart struct{ gen, part uint32 }

type span struct {
	first, last uint64
	gap, raw    bool
	key         string
	records     []modelRecord
	// parquet: records are the rows pyarrow reads back, duck those DuckDB
	// reads, compared with the payloads by value; unchecked when the
	// readers are not installed (never in CI).
	parquet, unchecked bool
	duck               []modelRecord
}

type modelRecord struct {
	offset  uint64
	payload []byte
	row     map[string]any // a Parquet row's payload fields
}

// coverage lists every object and gap marker, voided keys left out.
func (m *model) coverage(s *app.Sink) map[genPart][]span {
	ctx := context.Background()
	voided := map[string]bool{}
	var listed []string
	err := s.Objects.List(ctx, "archive/", func(key string, _ int64) error {
		if k, ok := keys.Voided(key); ok {
			voided[k] = true
		}
		listed = append(listed, key)
		return nil
	})
	if err != nil {
		m.t.Fatal(err)
	}
	cov := map[genPart][]span{}
	pq := map[string][]byte{}
	for _, key := range listed {
		n, ok := keys.ParseName(key)
		if !ok || n.Void || voided[key] {
			continue
		}
		sp := span{first: n.First, last: n.Last, gap: n.Gap, key: key}
		if !n.Gap {
			body, err := s.Objects.Get(ctx, key)
			if err != nil {
				m.t.Fatal(err)
			}
			if sp.parquet = strings.HasSuffix(key, ".parquet"); sp.parquet {
				pq[key] = body // read back below, all in one process
			} else {
				sp.records, sp.raw = m.decodeAny(key, body)
			}
		}
		gp := genPart{n.Generation, n.Partition}
		cov[gp] = append(cov[gp], sp)
		if os.Getenv("MODEL_DEBUG") != "" {
			m.t.Logf("listed %s", key)
		}
	}
	m.readParquet(cov, pq)
	return cov
}

// decodeAny reads an object of any format and compression back into its
// records; a raw object holds the payloads one after the other, so it is
// one record holding the whole body.
func (m *model) decodeAny(key string, body []byte) (recs []modelRecord, raw bool) {
	o := object{key: key, body: decompressed(m.t, key, body)}
	switch {
	case strings.Contains(key, ".jsonl"):
		return m.records(decode(m.t, "json_lines", o)), false
	case strings.Contains(key, ".json"):
		return m.records(decode(m.t, "json_array", o)), false
	}
	return []modelRecord{{payload: o.body}}, true
}

func (m *model) records(rs []record) []modelRecord {
	out := make([]modelRecord, len(rs))
	for i, r := range rs {
		out[i] = modelRecord{offset: r.Offset, payload: r.Payload}
	}
	return out
}

// checkGenerations maps partition p's generations to the incarnations
// they archived, in order: the newest generation holds the current
// incarnation, whole; an older one holds a prefix of some earlier
// incarnation (one the sink never read from gets no generation).
func (m *model) checkGenerations(cov map[genPart][]span, incarnations [][][]sent, p int) {
	var gens []uint32
	for gp := range cov {
		if gp.part == uint32(p) {
			gens = append(gens, gp.gen)
		}
	}
	slices.Sort(gens)
	current := len(incarnations) - 1
	if len(gens) == 0 {
		if len(incarnations[current][p]) > 0 {
			m.t.Fatalf("seed %d partition %d: nothing archived", m.seed, p)
		}
		return
	}
	next := 0
	for j, g := range gens {
		spans := cov[genPart{g, uint32(p)}]
		if j == len(gens)-1 {
			if err := m.checkPartition(spans, incarnations[current][p], true, p); err != nil {
				m.t.Fatalf("seed %d generation %d (the current incarnation) partition %d: %v", m.seed, g, p, err)
			}
			return
		}
		var errs []error
		for ; next < current; next++ {
			err := m.checkPartition(spans, incarnations[next][p], false, p)
			if err == nil {
				break
			}
			errs = append(errs, err)
		}
		if next == current {
			m.t.Fatalf("seed %d generation %d partition %d matches no earlier incarnation: %v", m.seed, g, p, errors.Join(errs...))
		}
		next++
	}
}

// checkPartition checks one generation's spans against one incarnation.
func (m *model) checkPartition(spans []span, sent []sent, current bool, p int) error {
	sort.Slice(spans, func(i, j int) bool { return spans[i].first < spans[j].first })
	next := uint64(0)
	for _, sp := range spans {
		switch {
		case sp.first != next:
			return fmt.Errorf("%s starts at %d, want %d (gap or overlap)", sp.key, sp.first, next)
		case sp.last >= uint64(len(sent)):
			return fmt.Errorf("%s ends at %d beyond the %d messages sent", sp.key, sp.last, len(sent))
		case sp.gap && current && sp.last >= m.deletedBelow[p]:
			return fmt.Errorf("gap marker %s reaches %d, but retention deleted only below %d", sp.key, sp.last, m.deletedBelow[p])
		case !sp.gap:
			if err := checkRecords(sp, sent); err != nil {
				return err
			}
		}
		next = sp.last + 1
	}
	if current && next != uint64(len(sent)) {
		return fmt.Errorf("covered up to %d, %d messages sent", next, len(sent))
	}
	return nil
}

func checkRecords(sp span, sent []sent) error {
	if sp.raw {
		var want []byte
		for off := sp.first; off <= sp.last; off++ {
			want = append(want, sent[off].payload...)
		}
		if !bytes.Equal(sp.records[0].payload, want) {
			return fmt.Errorf("%s: raw bytes differ from the payloads of %d..%d", sp.key, sp.first, sp.last)
		}
		return nil
	}
	if sp.unchecked {
		return nil
	}
	if sp.parquet {
		if err := checkRows(sp, sp.duck, sent); err != nil {
			return fmt.Errorf("read by DuckDB: %w", err)
		}
	}
	return checkRows(sp, sp.records, sent)
}

func checkRows(sp span, records []modelRecord, sent []sent) error {
	if uint64(len(records)) != sp.last-sp.first+1 {
		return fmt.Errorf("%s holds %d records for %d..%d", sp.key, len(records), sp.first, sp.last)
	}
	for i, r := range records {
		if r.offset != sp.first+uint64(i) {
			return fmt.Errorf("%s record %d: offset %d", sp.key, i, r.offset)
		}
		if sp.parquet {
			if err := sameRow(r.row, sent[r.offset].payload); err != nil {
				return fmt.Errorf("%s record %d (offset %d): %w", sp.key, i, r.offset, err)
			}
			continue
		}
		if !bytes.Equal(r.payload, sent[r.offset].payload) {
			return fmt.Errorf("%s record %d: offset %d payload %.40s", sp.key, i, r.offset, r.payload)
		}
	}
	return nil
}

// decompressed undoes an object's compression by its extension.
func decompressed(t *testing.T, key string, body []byte) []byte {
	t.Helper()
	var r io.Reader
	switch {
	case strings.HasSuffix(key, ".gz"):
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		r = zr
	case strings.HasSuffix(key, ".zst"):
		zr, err := zstd.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		defer zr.Close()
		r = zr
	default:
		return body
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return out
}
