package drain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// Step names a point in writing one object, for crash tests.
type Step string

// The steps of writing one object, in order.
const (
	StepPolled       Step = "after-poll"
	StepIntent       Step = "after-intent"
	StepMidUpload    Step = "mid-upload"
	StepUploaded     Step = "after-upload"
	StepStateWritten Step = "after-state-written"
	StepBeforeStore  Step = "before-offset-store"
	StepStored       Step = "after-offset-store"
)

// Steps lists every Step in order.
var Steps = []Step{StepPolled, StepIntent, StepMidUpload, StepUploaded, StepStateWritten, StepBeforeStore, StepStored}

// CleanupTimeout bounds what a run does after its context ends: releasing
// leases (each partition, at once) and then leaving the groups. A caller
// with a hard deadline keeps back at least twice this.
const CleanupTimeout = 2 * time.Second

// ErrCrash marks an abort injected by Runner.Hook: the run stops where it
// is, as if the process had died, releasing nothing.
var ErrCrash = errors.New("simulated crash")

// Runner runs the sink once over every configured stream and topic.
type Runner struct {
	Config  *config.Config
	Dial    func(ctx context.Context) (Conn, error)
	State   StateStore
	Objects ObjectStore
	// Owner names this run in leases; unique per run (host, process, random).
	Owner  string
	Logger *slog.Logger
	Now    func() time.Time
	// Transformer, when set, rewrites JSON payloads before encoding.
	Transformer batch.Transformer
	// KeepLimit is the largest object built in memory; larger ones are
	// re-read from Iggy and streamed as a multipart upload. Default:
	// Config.Plugin.MultipartThreshold.
	KeepLimit int64
	// Hook, when set, is called at every Step; an error aborts the run
	// there as a crash would. Tests only. It is called from several
	// goroutines at once (partitions, and a partition's background write).
	Hook func(step Step, p batch.Partition) error
}

type job struct {
	stream config.Stream
	topic  *source.Topic
	part   source.PartitionInfo
}

// Run drains once. It returns the summary, and an error when any partition
// or the connection failed (the summary still says what was written).
func (r *Runner) Run(ctx context.Context) (*Summary, error) {
	now := r.now()
	sum := &Summary{Owner: r.Owner, Started: now.UTC()}
	defer func() { sum.DurationMS = r.now().Sub(now).Milliseconds() }()
	log := r.logger()

	conn, err := r.Dial(ctx)
	if err != nil {
		return sum, fmt.Errorf("drain: %w", err)
	}
	var topics []*source.Topic
	var jobs []job
	var setupErr error
	for _, s := range r.Config.Streams {
		for _, name := range s.Topics {
			t, err := conn.Topic(ctx, s.Stream, name, s.ConsumerGroup)
			if err == nil {
				err = conn.Join(ctx, t)
			}
			if err != nil {
				setupErr = errors.Join(setupErr, err)
				continue
			}
			topics = append(topics, t)
			for _, p := range t.Partitions {
				jobs = append(jobs, job{stream: s, topic: t, part: p})
			}
		}
	}

	runCtx, abort := context.WithCancel(ctx)
	defer abort()
	results := make([]PartitionSummary, len(jobs))
	errs := make([]error, len(jobs))
	limit := r.Config.Plugin.PartitionConcurrency
	if limit < 1 {
		limit = 1
	}
	sem := make(chan struct{}, limit)
	// One partition at a time may read its next object while the previous
	// one uploads: that overlap is what makes a lone partition fast, and
	// capping it keeps memory near one object per partition drained at once.
	pipeline := make(chan struct{}, 1)
	var wg sync.WaitGroup
	var crashed sync.Once
	crash := false
	for i := range jobs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-runCtx.Done():
				results[i] = r.newSummary(jobs[i])
				results[i].Skipped = "run aborted before this partition started"
				return
			}
			defer func() { <-sem }()
			results[i], errs[i] = r.drainPartition(runCtx, conn, jobs[i], pipeline)
			if errors.Is(errs[i], ErrCrash) {
				crashed.Do(func() { crash = true; abort() })
			}
		}(i)
	}
	wg.Wait()

	if crash {
		// A dead process neither leaves its groups nor releases leases; the
		// socket closing is all the server sees.
		conn.Close()
		sum.Partitions = results
		sum.total()
		return sum, fmt.Errorf("drain: %w", errors.Join(errs...))
	}

	// Lag after the run, from fresh partition offsets; then leave. Bounded
	// so that cleanup fits in the time a Lambda keeps back (CleanupTimeout).
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	defer cancel()
	for _, t := range topics {
		if err := conn.Refresh(cleanup, t); err != nil {
			log.Warn("could not refresh partition offsets for the lag figure", "stream", t.Stream, "topic", t.Topic, "error", err.Error())
		}
	}
	for i := range results {
		results[i].Lag = lag(jobs[i].topic, results[i])
	}
	for _, t := range topics {
		if err := conn.Leave(cleanup, t); err != nil {
			log.Warn("leaving the consumer group failed; the server drops the membership when the connection closes", "group", t.Group, "stream", t.Stream, "topic", t.Topic, "error", err.Error())
		}
	}
	conn.Close()

	sum.Partitions = results
	sum.total()
	all := append([]error{setupErr}, errs...)
	if err := errors.Join(all...); err != nil {
		return sum, fmt.Errorf("drain: %w", err)
	}
	return sum, nil
}

func lag(t *source.Topic, ps PartitionSummary) uint64 {
	for _, p := range t.Partitions {
		if p.ID != ps.Partition {
			continue
		}
		if p.MessagesCount == 0 {
			return 0
		}
		if ps.Committed == nil {
			return p.CurrentOffset + 1
		}
		if p.CurrentOffset > *ps.Committed {
			return p.CurrentOffset - *ps.Committed
		}
		return 0
	}
	return 0
}

func (s *Summary) total() {
	s.Objects, s.Messages, s.Bytes, s.Failed = 0, 0, 0, 0
	for _, p := range s.Partitions {
		s.Objects += p.Objects
		s.Messages += p.Messages
		s.Bytes += p.Bytes
		if p.Error != "" {
			s.Failed++
		}
	}
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

func (r *Runner) newSummary(j job) PartitionSummary {
	return PartitionSummary{Stream: j.topic.Stream, Topic: j.topic.Topic, Partition: j.part.ID}
}
