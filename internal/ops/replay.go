package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/archive"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/replay"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// ReplayOptions are poller replay's flags.
type ReplayOptions struct {
	// Stream and Topic are the archived names (default: the configuration's
	// first stream and its first topic).
	Stream, Topic string
	// ToStream, ToTopic (default: the archived names) and ToAddress
	// (default: the configured server) name the target.
	ToStream, ToTopic, ToAddress string
	// Partitions to replay (nil: every archived one).
	Partitions []uint32
	FromOffset *uint64
	ToOffset   *uint64
	Since      time.Time
	Until      time.Time
	// Generation to replay (nil: the newest the archive has).
	Generation *uint32
	Append     bool
	// IncludeErrors replays the records of error objects too
	// (invalid_payload = "error_object"), in offset order.
	IncludeErrors bool
	// Parallel is how many partitions are replayed at once (each on a
	// connection of its own); below 1 means 1.
	Parallel int
	// ChunkMessages bounds one produced batch (0: replay.DefaultChunkMessages).
	ChunkMessages int
	// StopBy, when set, is when to stop starting chunks (a Lambda
	// invocation's time): the summary is then not Done, and the next run
	// goes on.
	StopBy time.Time
	JSON   bool
	// Progress gets a line every few seconds (nil: none).
	Progress io.Writer
}

// ReplayRequest is a replay as a Lambda invocation asks for it
// ({"mode":"replay","replay":{...}}): ReplayOptions in JSON, times in
// RFC 3339.
type ReplayRequest struct {
	Stream        string   `json:"stream"`
	Topic         string   `json:"topic"`
	ToStream      string   `json:"to_stream"`
	ToTopic       string   `json:"to_topic"`
	ToAddress     string   `json:"to_address"`
	Partitions    []uint32 `json:"partitions"`
	FromOffset    *uint64  `json:"from_offset"`
	ToOffset      *uint64  `json:"to_offset"`
	Since         string   `json:"since"`
	Until         string   `json:"until"`
	Generation    *uint32  `json:"generation"`
	Append        bool     `json:"append"`
	IncludeErrors bool     `json:"include_errors"`
	Parallel      int      `json:"parallel"`
	ChunkMessages int      `json:"chunk_messages"`
}

// Options checks the request and turns it into ReplayOptions; an error
// names the field and what it takes.
func (r ReplayRequest) Options() (ReplayOptions, error) {
	o := ReplayOptions{Stream: r.Stream, Topic: r.Topic, ToStream: r.ToStream, ToTopic: r.ToTopic, ToAddress: r.ToAddress,
		Partitions: r.Partitions, FromOffset: r.FromOffset, ToOffset: r.ToOffset, Generation: r.Generation,
		Append: r.Append, IncludeErrors: r.IncludeErrors, Parallel: r.Parallel, ChunkMessages: r.ChunkMessages}
	if o.Parallel == 0 {
		o.Parallel = DefaultReplayParallel
	}
	if o.Parallel < 1 {
		return o, fmt.Errorf("replay parallel %d: want at least 1", r.Parallel)
	}
	if o.FromOffset != nil && o.ToOffset != nil && *o.FromOffset > *o.ToOffset {
		return o, fmt.Errorf("replay from offset %d is after to offset %d", *o.FromOffset, *o.ToOffset)
	}
	var err error
	if o.Since, err = ParseReplayTime("replay since", r.Since); err != nil {
		return o, err
	}
	o.Until, err = ParseReplayTime("replay until", r.Until)
	return o, err
}

// ParseReplayTime reads a replay's -since or -until ("" is none); the
// error names the setting.
func ParseReplayTime(setting, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return t, fmt.Errorf("%s %q: want an RFC 3339 time, e.g. 2026-12-01T00:00:00Z", setting, v)
	}
	return t, nil
}

// DefaultReplayParallel is how many partitions a replay takes at once.
const DefaultReplayParallel = 4

// ErrReplayIncomplete: some partition could not be replayed in full.
var ErrReplayIncomplete = errors.New("replay incomplete")

// probeLimit is how many partitions past the last archived one a replay
// looks for, when the archived topic is gone from the server.
const probeLimit = 4

// replayGroup names the (never joined) group a target topic is resolved
// under.
const replayGroup = "iggy-s3-sink-replay"

// Replay replays the archive s's configuration describes into the target,
// and writes the summary to w (JSON with o.JSON).
func Replay(ctx context.Context, s *app.Sink, w io.Writer, o ReplayOptions, log *slog.Logger) error {
	sum, err := RunReplay(ctx, s, o, log)
	if sum == nil {
		return err
	}
	var werr error
	if o.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		werr = enc.Encode(sum)
	} else {
		werr = sum.write(w)
	}
	if err == nil {
		err = werr
	}
	return err
}

// RunReplay is Replay returning the summary; the error says which
// partitions stopped (the summary is then there too).
func RunReplay(ctx context.Context, s *app.Sink, o ReplayOptions, log *slog.Logger) (*ReplaySummary, error) {
	cfg := s.Config
	if o.Stream == "" && len(cfg.Streams) > 0 {
		o.Stream = cfg.Streams[0].Stream
	}
	var schema batch.Schema
	for _, st := range cfg.Streams {
		if st.Stream == o.Stream {
			schema = st.Schema
			if o.Topic == "" && len(st.Topics) > 0 {
				o.Topic = st.Topics[0]
			}
		}
	}
	if o.Stream == "" || o.Topic == "" {
		return nil, errors.New("replay: name the archived stream and topic (-stream, -topic): the configuration has none")
	}
	seen := map[uint32]bool{}
	for _, p := range o.Partitions {
		if seen[p] {
			return nil, fmt.Errorf("replay partitions: %d is named twice; name each partition once", p)
		}
		seen[p] = true
	}
	if o.ToStream == "" {
		o.ToStream = o.Stream
	}
	if o.ToTopic == "" {
		o.ToTopic = o.Topic
	}
	conn, err := s.OpenIggyAt(ctx, o.ToAddress)
	if err != nil {
		return nil, err
	}
	defer conn.Close()

	reports, err := replayReports(ctx, s, o, conn)
	if err != nil {
		return nil, err
	}
	gen, plans, leftOut, err := pickGeneration(reports, o.Generation)
	if err != nil {
		return nil, err
	}
	for _, l := range leftOut {
		log.Warn("a partition of the archive is left out: it holds no object of the generation replayed", "detail", l)
	}
	if len(plans) == 0 {
		return nil, fmt.Errorf("replay: the archive holds nothing of %s/%s under s3://%s/%s", o.Stream, o.Topic, cfg.Plugin.Bucket, cfg.Plugin.Prefix)
	}
	var ids []uint32
	for _, p := range plans {
		ids = append(ids, p.Partition)
	}
	// A target created by a replay of some partitions is sized for every
	// archived one, so that replays of the others (other Lambda
	// invocations) fit in it too.
	archived := func() ([]uint32, error) {
		if o.Partitions == nil {
			return ids, nil
		}
		every := o
		every.Partitions = nil
		reps, err := replayReports(ctx, s, every, conn)
		all := append([]uint32(nil), ids...)
		for _, r := range reps {
			all = append(all, r.Partition)
		}
		return all, err
	}
	t, created, err := targetTopic(ctx, conn, o.ToStream, o.ToTopic, ids, archived)
	if err != nil {
		return nil, err
	}
	reader := &replay.Reader{Objects: s.Objects, Layout: archive.Layout{Format: cfg.Plugin.OutputFormat, Compression: cfg.Plugin.Compression,
		Schema: schema, Metadata: cfg.Plugin.IncludeMetadata, Headers: cfg.Plugin.IncludeHeaders}}
	names := s.Names()
	if _, ok := names.ErrorsPrefix(); ok {
		reader.ErrorsKey = names.ErrorsKeyOf
	} else if o.IncludeErrors {
		return nil, errors.New(`replay -include-errors: the configuration names no error objects (invalid_payload = "error_object" writes them)`)
	}
	reader.IncludeErrors = o.IncludeErrors
	owner, _ := os.Hostname()
	owner = fmt.Sprintf("replay-%s-%d-%d", owner, os.Getpid(), time.Now().UnixNano())
	prog := &replayProgress{w: o.Progress, start: time.Now(), done: map[uint32]replay.Progress{}, planned: map[uint32]uint64{}}
	opts := replay.Options{Source: replay.Source{Stream: o.Stream, Topic: o.Topic, Generation: gen}, TargetStream: t.Stream, TargetTopic: t.Topic,
		Owner: owner, FromOffset: o.FromOffset, ToOffset: o.ToOffset, Since: o.Since, Until: o.Until, Append: o.Append,
		StopBy: o.StopBy, Progress: prog.report, Log: log, ChunkMessages: o.ChunkMessages, LeaseTTL: cfg.Plugin.LeaseDuration}
	for _, p := range plans {
		prog.planned[p.Partition] = p.messages()
	}
	sum := ReplaySummary{Source: fmt.Sprintf("%s/%s", o.Stream, o.Topic), Generation: gen, Target: fmt.Sprintf("%s/%s", t.Stream, t.Topic), Created: created,
		LeftOut: leftOut}
	// Partitions go in parallel, each worker on a connection of its own
	// (a connection's calls are one at a time).
	workers := min(len(plans), max(o.Parallel, 1))
	results := make([]replay.Result, len(plans))
	next := make(chan int)
	var wg sync.WaitGroup
	var openErr error
	var openMu sync.Mutex
	for w := range workers {
		wc, wt := conn, t
		if w > 0 {
			c, err := s.OpenIggyAt(ctx, o.ToAddress)
			if err == nil {
				wt, err = c.Topic(ctx, t.Stream, t.Topic, replayGroup)
			}
			if err != nil {
				openMu.Lock()
				openErr = err
				openMu.Unlock()
				if c != nil {
					c.Close()
				}
				continue
			}
			defer c.Close()
			wc = c
		}
		tt := &replay.TopicTarget{Conn: wc, Topic: wt}
		r := &replay.Replayer{Reader: reader, Target: tt, State: s.State, Opts: opts}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if tt.Conn.Lost() {
					// A failed send cut the connection: the worker's next
					// partitions go on a new one.
					if c, err := s.OpenIggyAt(ctx, o.ToAddress); err == nil {
						if nt, err := c.Topic(ctx, t.Stream, t.Topic, replayGroup); err == nil {
							defer c.Close()
							tt.Conn, tt.Topic = c, nt
						} else {
							c.Close()
						}
					}
				}
				results[i] = r.Partition(ctx, plans[i].Plan)
			}
		}()
	}
	for i := range plans {
		next <- i
	}
	close(next)
	wg.Wait()
	if openErr != nil {
		log.Warn("a replay worker could not connect; fewer partitions went in parallel", "error", openErr.Error())
	}
	failed, stopped := 0, false
	for i, res := range results {
		stopped = stopped || res.Stopped
		line := PartitionReplay{Result: res}
		if res.Err != nil {
			failed++
			line.Error = res.Err.Error()
			log.Error("replay of a partition stopped", "partition", plans[i].Partition, "error", line.Error)
		} else {
			log.Info("partition replayed", "partition", plans[i].Partition, "replayed", res.Replayed, "aligned", res.Aligned, "resumed", res.Resumed)
		}
		sum.Partitions = append(sum.Partitions, line)
		sum.Replayed += res.Replayed
		sum.Bytes += res.Bytes
	}
	sum.Seconds = time.Since(prog.start).Seconds()
	sum.Done = failed == 0 && !stopped
	if failed > 0 {
		return &sum, fmt.Errorf("%w: %d of %d partitions stopped (see above); run again to go on", ErrReplayIncomplete, failed, len(plans))
	}
	return &sum, nil
}

// replayReports audits the archived partitions: those asked for, or
// else every partition the archived topic still has on the server conn
// talks to (when it is the configured one), and past them every one the
// archive has, found by listing until probeLimit partitions in a row hold
// nothing.
func replayReports(ctx context.Context, s *app.Sink, o ReplayOptions, conn *source.Conn) ([]audit.Report, error) {
	parts := o.Partitions
	if parts == nil {
		var known uint32
		if o.ToAddress == "" {
			tp, err := conn.Topic(ctx, o.Stream, o.Topic, replayGroup)
			switch {
			case err == nil:
				for _, pi := range tp.Partitions {
					known = max(known, pi.ID+1)
				}
			case !errors.Is(err, source.ErrNotFound): // gone is fine: the archive says
				return nil, fmt.Errorf("replay: look up the archived topic's partitions: %w", err)
			}
		}
		var reports []audit.Report
		misses := 0
		for p := uint32(0); p < known || misses < probeLimit; p++ {
			reps, err := audit.Check(ctx, s.Objects, s.Names(), []audit.Partition{{Stream: o.Stream, Topic: o.Topic, Partition: p}})
			if err != nil {
				return nil, s.Explainer().S3("list", err)
			}
			if len(reps) == 0 || reps[0].Objects == 0 && reps[0].GapMarkers == 0 {
				misses++
				continue
			}
			misses = 0
			reports = append(reports, reps...)
		}
		return reports, nil
	}
	var ap []audit.Partition
	for _, p := range parts {
		ap = append(ap, audit.Partition{Stream: o.Stream, Topic: o.Topic, Partition: p})
	}
	reps, err := audit.Check(ctx, s.Objects, s.Names(), ap)
	if err != nil {
		return nil, s.Explainer().S3("list", err)
	}
	return reps, nil
}

type partitionPlan struct {
	replay.Plan
}

func (p partitionPlan) messages() uint64 {
	var n uint64
	for _, pc := range p.Pieces {
		if pc.Marker == "" {
			n += pc.Last - pc.First + 1
		}
	}
	return n
}

// pickGeneration keeps the reports of one generation (want, or the newest
// of any partition: a topic re-created is re-created whole, so an older
// generation of a partition is of a topic that is gone), and says which
// archived partitions that leaves out.
func pickGeneration(reports []audit.Report, want *uint32) (uint32, []partitionPlan, []string, error) {
	var gen uint32
	if want != nil {
		gen = *want
	} else {
		for _, r := range reports {
			gen = max(gen, r.Generation)
		}
	}
	var plans []partitionPlan
	kept := map[uint32]bool{}
	others := map[uint32][]uint32{}
	for _, r := range reports {
		if r.Objects == 0 && r.GapMarkers == 0 {
			continue
		}
		if r.Generation != gen {
			others[r.Partition] = append(others[r.Partition], r.Generation)
			continue
		}
		p, err := replay.PlanOf(r)
		if err != nil {
			return 0, nil, nil, err
		}
		plans = append(plans, partitionPlan{p})
		kept[r.Partition] = true
	}
	var leftOut []string
	for _, r := range reports {
		if gens, ok := others[r.Partition]; ok && !kept[r.Partition] {
			delete(others, r.Partition)
			leftOut = append(leftOut, fmt.Sprintf("partition %d: generation %v only, not %d (-generation %d replays it)", r.Partition, gens, gen, gens[len(gens)-1]))
		}
	}
	return gen, plans, leftOut, nil
}

// targetTopic resolves the target, creating it (and its stream) when it
// is missing with partitions up to the highest id archived says; a target
// without one of ids is refused.
func targetTopic(ctx context.Context, conn *source.Conn, stream, topic string, ids []uint32, archived func() ([]uint32, error)) (*source.Topic, bool, error) {
	t, err := conn.Topic(ctx, stream, topic, replayGroup)
	created := false
	if errors.Is(err, source.ErrNotFound) {
		all, aerr := archived()
		if aerr != nil {
			return nil, false, aerr
		}
		count := uint32(1) // partition ids count from 0: enough to reach the highest
		for _, id := range all {
			count = max(count, id+1)
		}
		err = conn.CreateTopic(ctx, stream, topic, count)
		created = err == nil
		if err == nil || errors.Is(err, source.ErrExists) { // another replay created it meanwhile
			t, err = conn.Topic(ctx, stream, topic, replayGroup)
		}
	}
	if err != nil {
		return nil, false, err
	}
	has := map[uint32]bool{}
	for _, p := range t.Partitions {
		has[p.ID] = true
	}
	var missing []string
	for _, id := range ids {
		if !has[id] {
			missing = append(missing, strconv.FormatUint(uint64(id), 10))
		}
	}
	if len(missing) > 0 {
		return nil, false, fmt.Errorf("replay: the target %s/%s has no partition %s (it has %d): partition p goes into partition p, so give the target more partitions, or choose partitions with -partitions",
			t.Stream, t.Topic, strings.Join(missing, ", "), len(t.Partitions))
	}
	return t, created, nil
}

// ReplaySummary is what poller replay reports.
type ReplaySummary struct {
	Source     string  `json:"source"`
	Generation uint32  `json:"generation"`
	Target     string  `json:"target"`
	Created    bool    `json:"created"`
	Replayed   uint64  `json:"replayed"`
	Bytes      uint64  `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	// Done: every partition is replayed in full (not stopped by StopBy, no
	// error); else run again to go on.
	Done       bool              `json:"done"`
	Partitions []PartitionReplay `json:"partitions"`
	// LeftOut are archived partitions with objects of other generations
	// only (-generation chooses one).
	LeftOut []string `json:"left_out,omitempty"`
}

// PartitionReplay is one partition's line of the summary.
type PartitionReplay struct {
	replay.Result
	Error string `json:"error,omitempty"`
}

func (s *ReplaySummary) write(w io.Writer) error {
	var b strings.Builder
	verb := "into"
	if s.Created {
		verb = "into the new topic"
	}
	fmt.Fprintf(&b, "replay of %s (generation %d) %s %s: %d messages, %.1f MB in %.1fs\n", s.Source, s.Generation, verb, s.Target, s.Replayed, float64(s.Bytes)/1e6, s.Seconds)
	for _, p := range s.Partitions {
		fmt.Fprintf(&b, "  partition %d: %d replayed", p.Partition, p.Replayed)
		if p.TargetFirst != nil {
			fmt.Fprintf(&b, " (target offsets %d..%d", *p.TargetFirst, *p.TargetLast)
			if p.Aligned {
				b.WriteString(", the archive's own")
			}
			b.WriteString(")")
		}
		if p.Position != nil {
			fmt.Fprintf(&b, "; the target holds the archive up to offset %d", *p.Position)
		}
		b.WriteString("\n")
		if p.Resumed != "" {
			fmt.Fprintf(&b, "    resumed: %s\n", p.Resumed)
		}
		if len(p.Markers) > 0 {
			fmt.Fprintf(&b, "    gaps of the archive, not replayed: %s\n", strings.Join(p.Markers, ", "))
		}
		if len(p.Missing) > 0 {
			fmt.Fprintf(&b, "    offsets in no object or marker: %s\n", strings.Join(p.Missing, ", "))
		}
		if p.Absent > 0 {
			fmt.Fprintf(&b, "    in error objects, not replayed: %d (-include-errors replays them)\n", p.Absent)
		}
		if p.Filtered > 0 {
			fmt.Fprintf(&b, "    left out by -since/-until: %d\n", p.Filtered)
		}
		if p.Error != "" {
			fmt.Fprintf(&b, "    STOPPED: %s\n", p.Error)
		}
	}
	for _, l := range s.LeftOut {
		fmt.Fprintf(&b, "  left out: %s\n", l)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// replayProgress writes a line every few seconds: messages, MB/s, ETA.
type replayProgress struct {
	w           io.Writer
	start, last time.Time
	// planned are the archived messages of each partition's plan.
	planned map[uint32]uint64
	mu      sync.Mutex
	done    map[uint32]replay.Progress
}

func (p *replayProgress) report(pr replay.Progress) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done[pr.Partition] = pr
	now := time.Now()
	if now.Sub(p.last) < 5*time.Second {
		return
	}
	p.last = now
	var all, bytes, left uint64
	for part, n := range p.planned {
		d, ok := p.done[part]
		switch {
		case !ok:
			left += n // not begun: all of it (a run that goes on from an earlier one says less once it began)
		case d.Last > d.At:
			left += d.Last - d.At
		}
		all, bytes = all+d.Messages, bytes+d.Bytes
	}
	el := now.Sub(p.start).Seconds()
	line := fmt.Sprintf("replay: %d messages, %.1f MB/s, about %d left", all, float64(bytes)/1e6/el, left)
	if all > 0 && left > 0 {
		line += fmt.Sprintf(", about %s", time.Duration(el*float64(left)/float64(all)*float64(time.Second)).Round(time.Second))
	}
	fmt.Fprintln(p.w, line)
}
