package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/archive"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/iggyadmin"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// world is an archive in S3 (versitygw), an Iggy broker to replay it into
// and the state table, for one test.
type world struct {
	t *testing.T
	// admin is the in-repo broker, or the real server IGGY_TEST_ADDRESS
	// names; user and password log in to it.
	admin          iggyadmin.Admin
	user, password string
	protocol       string
	// targetStream is the stream replayed into (unique on a real server).
	targetStream string
	up           *s3store.Uploader
	names        *keys.Namer
	layout       archive.Layout
	mu           sync.Mutex
	store        *state.Memory
	src          Source
	// records are the archived records by partition, in offset order.
	records map[uint32][]archive.Record
	plans   []Plan
	gaps    bool
}

const ttl = 300 * time.Millisecond

func newWorld(t *testing.T, s3srv *testenv.S3, rng *rand.Rand, protocol string, partitions int, layout archive.Layout, gaps bool) *world {
	t.Helper()
	var admin iggyadmin.Admin
	user, password := "iggy", "iggy"
	if real := iggyadmin.FromEnv(t); real != nil {
		admin, user, password = real, real.Username, real.Password
	} else {
		b, err := iggytest.Start(iggytest.WithProtocol(protocol), iggytest.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		admin = b
	}
	bucket := fmt.Sprintf("replay-%d", time.Now().UnixNano())
	s3srv.CreateBucket(t, bucket)
	client, err := s3store.NewClient(context.Background(), s3store.ClientOptions{Region: s3srv.Region, Endpoint: s3srv.Endpoint,
		AccessKeyID: s3srv.AccessKey, SecretAccessKey: s3srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := keys.ParseTemplate("{stream}/{topic}/{partition}")
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, admin: admin, user: user, password: password, protocol: protocol, targetStream: fmt.Sprintf("restore-%d", time.Now().UnixNano()), up: s3store.New(client, s3store.Options{Bucket: bucket, MaxAttempts: 2}),
		names: keys.NewNamer("arch", tpl, layout.Format.Ext()+layout.Compression.Ext()), layout: layout, store: state.NewMemory(time.Now),
		src: Source{Stream: "orders", Topic: "events"}, records: map[uint32][]archive.Record{}, gaps: gaps}
	w.archive(rng, partitions)
	return w
}

// archive writes each partition's objects and markers, as the sink does.
func (w *world) archive(rng *rand.Rand, partitions int) {
	ctx := context.Background()
	var parts []audit.Partition
	for p := range uint32(partitions) {
		pn := w.names.Partition(w.src.Stream, w.src.Topic, p)
		ts := uint64(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixMicro()) + uint64(p)*7_000_000
		for off, n := uint64(0), 2+rng.IntN(6); n > 0; n-- {
			count := uint64(1 + rng.IntN(25))
			if w.gaps && rng.IntN(5) == 0 {
				if _, err := w.up.Put(ctx, s3store.Object{Key: pn.Gap(off, off+count-1, ts)}, nil); err != nil {
					w.t.Fatal(err)
				}
				off += count
				continue
			}
			msgs := make([]batch.Message, count)
			for i := range msgs {
				o := off + uint64(i)
				msgs[i] = batch.Message{Offset: o, Timestamp: ts + o*1_000_000, Payload: fmt.Appendf(nil, `{"p":%d,"o":%d,"pad":"%s"}`, p, o, bytes.Repeat([]byte("x"), rng.IntN(200)))}
				if rng.IntN(2) == 0 {
					msgs[i].Headers = archive.AppendHeader(nil, "trace", 2, fmt.Appendf(nil, "t-%d-%d", p, o))
				}
			}
			body := encodeObject(w.t, w.layout, msgs)
			if _, err := w.up.Put(ctx, s3store.Object{Key: pn.Object(off, off+count-1, ts)}, body); err != nil {
				w.t.Fatal(err)
			}
			for _, m := range msgs {
				rec := archive.Record{Offset: m.Offset, HasOffset: true, Timestamp: m.Timestamp, Headers: m.Headers, Payload: m.Payload}
				if w.layout.Format != batch.FormatParquet {
					rec.Timestamp -= rec.Timestamp % 1_000_000 // JSON keeps seconds
				}
				w.records[p] = append(w.records[p], rec)
			}
			off += count
		}
		parts = append(parts, audit.Partition{Stream: w.src.Stream, Topic: w.src.Topic, Partition: p})
	}
	reps, err := audit.Check(ctx, w.up, w.names, parts)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, r := range reps {
		plan, err := PlanOf(r)
		if err != nil {
			w.t.Fatal(err)
		}
		w.plans = append(w.plans, plan)
	}
}

func encodeObject(t testing.TB, l archive.Layout, msgs []batch.Message) []byte {
	t.Helper()
	enc, err := batch.NewEncoder(batch.Partition{Stream: "orders", Topic: "events"},
		batch.Options{Format: l.Format, Schema: l.Schema, IncludeMetadata: l.Metadata, IncludeHeaders: l.Headers})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	ow, err := batch.NewObjectWriter(&buf, enc, l.Compression)
	if err != nil {
		t.Fatal(err)
	}
	for pass := 0; pass < ow.Passes(); pass++ {
		for i := range msgs {
			if pass == 0 && ow.Passes() == 2 {
				err = ow.Observe(&msgs[i])
			} else {
				err = ow.Write(&msgs[i])
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := ow.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func (w *world) stateStore() *state.Memory {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.store
}

// replaceState is an operator replacing the state table: every lease and
// position is gone.
func (w *world) replaceState() {
	w.mu.Lock()
	w.store = state.NewMemory(time.Now)
	w.mu.Unlock()
}

// process is one replayer run: its own connection and owner, killed at its
// kill-th call (before the call, or after it took effect), or stalled past
// its lease before one.
type process struct {
	w      *world
	conn   *source.Conn
	target *TopicTarget
	faults *faults
	owner  string
}

var errKilled = errors.New("killed (test)")

type faults struct {
	mu      sync.Mutex
	calls   int
	killAt  int // -1: never
	after   bool
	stallAt int // -1: never
	dead    bool
}

// step is called around every remote call of the process: it reports
// whether the call is to be made, and (after it) whether its result is to
// be thrown away.
func (f *faults) before() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dead {
		return errKilled
	}
	n := f.calls
	f.calls++
	if n == f.stallAt {
		f.mu.Unlock()
		time.Sleep(ttl + 100*time.Millisecond)
		f.mu.Lock()
	}
	if n == f.killAt && !f.after {
		f.dead = true
		return errKilled
	}
	return nil
}

func (f *faults) afterCall() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.killAt >= 0 && f.calls-1 == f.killAt && f.after {
		f.dead = true
		return errKilled
	}
	return nil
}

func (w *world) process(name string, f *faults) *process {
	w.t.Helper()
	conn, err := source.Open(context.Background(), source.Config{Address: w.admin.Addr(), Username: w.user, Password: w.password,
		ConnectTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { conn.Close() })
	ctx := context.Background()
	tp, err := conn.Topic(ctx, w.targetStream, "events", "never-joined")
	if errors.Is(err, source.ErrNotFound) {
		if err = conn.CreateTopic(ctx, w.targetStream, "events", uint32(len(w.plans))); err != nil && !errors.Is(err, source.ErrExists) {
			w.t.Fatal(err)
		}
		tp, err = conn.Topic(ctx, w.targetStream, "events", "never-joined")
	}
	if err != nil {
		w.t.Fatal(err)
	}
	if f == nil {
		f = &faults{killAt: -1, stallAt: -1}
	}
	return &process{w: w, conn: conn, target: &TopicTarget{Conn: conn, Topic: tp}, faults: f, owner: name}
}

// replayer wires the process's faults around the target and the store.
func (p *process) replayer() *Replayer {
	return &Replayer{
		Reader: &Reader{Objects: p.w.up, Layout: p.w.layout},
		Target: faultyTarget{p.target, p.faults},
		State:  faultyStore{p.w.stateStore(), p.faults},
		Opts:   Options{Source: p.w.src, TargetStream: p.w.targetStream, TargetTopic: "events", Owner: p.owner, LeaseTTL: ttl, ChunkMessages: 7},
	}
}

// run replays every partition (in rng's order), as one process does.
func (p *process) run(rng *rand.Rand) []Result {
	r := p.replayer()
	var out []Result
	for _, i := range rng.Perm(len(p.w.plans)) {
		out = append(out, r.Partition(context.Background(), p.w.plans[i]))
	}
	return out
}

type faultyTarget struct {
	t Target
	f *faults
}

func (ft faultyTarget) Next(ctx context.Context, p uint32) (uint64, uint64, error) {
	if err := ft.f.before(); err != nil {
		return 0, 0, err
	}
	n, id, err := ft.t.Next(ctx, p)
	if err := ft.f.afterCall(); err != nil {
		return 0, 0, err
	}
	return n, id, err
}

func (ft faultyTarget) Read(ctx context.Context, p uint32, offset uint64, count uint32) ([]batch.Message, error) {
	if err := ft.f.before(); err != nil {
		return nil, err
	}
	m, err := ft.t.Read(ctx, p, offset, count)
	if err := ft.f.afterCall(); err != nil {
		return nil, err
	}
	return m, err
}

func (ft faultyTarget) Send(ctx context.Context, p uint32, msgs []source.Outgoing) (uint64, bool, error) {
	if err := ft.f.before(); err != nil {
		return 0, false, err
	}
	a, k, err := ft.t.Send(ctx, p, msgs)
	if err := ft.f.afterCall(); err != nil {
		return 0, false, err
	}
	return a, k, err
}

type faultyStore struct {
	s *state.Memory
	f *faults
}

func wrap[T any](f *faults, call func() (T, error)) (T, error) {
	var zero T
	if err := f.before(); err != nil {
		return zero, err
	}
	v, err := call()
	if err := f.afterCall(); err != nil {
		return zero, err
	}
	return v, err
}

func (fs faultyStore) Acquire(ctx context.Context, key state.Key, owner string, ttl time.Duration) (state.State, error) {
	return wrap(fs.f, func() (state.State, error) { return fs.s.Acquire(ctx, key, owner, ttl) })
}
func (fs faultyStore) SetIntent(ctx context.Context, s state.State, in state.Intent, ttl time.Duration) (state.State, error) {
	return wrap(fs.f, func() (state.State, error) { return fs.s.SetIntent(ctx, s, in, ttl) })
}
func (fs faultyStore) Complete(ctx context.Context, s state.State, d state.Done, ttl time.Duration) (state.State, error) {
	return wrap(fs.f, func() (state.State, error) { return fs.s.Complete(ctx, s, d, ttl) })
}
func (fs faultyStore) Abandon(ctx context.Context, s state.State, ttl time.Duration) (state.State, error) {
	return wrap(fs.f, func() (state.State, error) { return fs.s.Abandon(ctx, s, ttl) })
}
func (fs faultyStore) Skip(ctx context.Context, s state.State, last, gap uint64, ttl time.Duration) (state.State, error) {
	return wrap(fs.f, func() (state.State, error) { return fs.s.Skip(ctx, s, last, gap, ttl) })
}

func (fs faultyStore) Adopt(ctx context.Context, s state.State, inc uint64, ttl time.Duration) (state.State, error) {
	return wrap(fs.f, func() (state.State, error) { return fs.s.Adopt(ctx, s, inc, ttl) })
}
func (fs faultyStore) Reset(ctx context.Context, s state.State, inc uint64, gen uint32, ttl time.Duration) (state.State, error) {
	return wrap(fs.f, func() (state.State, error) { return fs.s.Reset(ctx, s, inc, gen, ttl) })
}

// Release: a killed process releases nothing (its lease expires).
func (fs faultyStore) Release(ctx context.Context, s state.State) error {
	fs.f.mu.Lock()
	dead := fs.f.dead
	fs.f.mu.Unlock()
	if dead {
		return nil
	}
	return fs.s.Release(ctx, s)
}

// check asserts the guarantee on the target: in each partition, this
// archive's messages in archived order, each at most once; where no
// foreign producer wrote, exactly the archive's records, nothing else, at
// the archive's offsets when it has no gaps.
func (w *world) check(foreign map[uint32]bool) {
	w.t.Helper()
	p := w.process("checker", nil)
	ctx := context.Background()
	for _, plan := range w.plans {
		part := plan.Partition
		var got []batch.Message
		for at := uint64(0); ; {
			msgs, err := p.conn.Read(ctx, p.target.Topic, part, at, 500)
			if err != nil {
				w.t.Fatal(err)
			}
			if len(msgs) == 0 {
				break
			}
			got = append(got, msgs...)
			at = msgs[len(msgs)-1].Offset + 1
		}
		want := w.records[part]
		var ours []batch.Message
		for _, m := range got {
			if _, ok := w.src.Archived(part, m.ID); ok {
				ours = append(ours, m)
			}
		}
		for i, m := range ours {
			off, _ := w.src.Archived(part, m.ID)
			if i >= len(want) || want[i].Offset != off {
				w.t.Fatalf("partition %d: target message %d (offset %d) is archived offset %d; the archive's next is %v: duplicated or out of order",
					part, i, m.Offset, off, func() any {
						if i < len(want) {
							return want[i].Offset
						}
						return "none"
					}())
			}
			r := want[i]
			if !bytes.Equal(m.Payload, r.Payload) || !bytes.Equal(m.Headers, r.Headers) || m.OriginTimestamp != r.Timestamp {
				w.t.Fatalf("partition %d offset %d: payload %q headers %x origin %d; archived %q %x %d", part, off, m.Payload, m.Headers, m.OriginTimestamp, r.Payload, r.Headers, r.Timestamp)
			}
		}
		if foreign[part] {
			continue
		}
		if len(ours) != len(want) || len(got) != len(want) {
			w.t.Fatalf("partition %d: the target holds %d messages, %d of them the archive's; the archive has %d", part, len(got), len(ours), len(want))
		}
		if !w.gaps {
			for i, m := range got {
				if m.Offset != want[i].Offset {
					w.t.Fatalf("partition %d: archived offset %d landed at target offset %d (an archive without gaps keeps its offsets)", part, want[i].Offset, m.Offset)
				}
			}
		}
	}
}
