package drain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// ErrCrash marks an abort injected by a StepHook: the run stops where it
// is, as if the process had died, releasing nothing.
var ErrCrash = errors.New("simulated crash")

// Runner runs the sink once over every configured stream and topic.
type Runner struct {
	Options Options
	Dial    func(ctx context.Context) (Conn, error)
	State   StateStore
	Objects ObjectStore
	// Owner names this run in leases; unique per run (host, process, random).
	Owner  string
	Logger *slog.Logger
	Now    func() time.Time
	Hooks  []Hook
	// Marked, shared by the runs of one process, spares them writing the
	// generation markers again; nil writes them every run.
	Marked *MarkedGenerations
	// LeaveIdle leaves a partition with nothing to archive without a
	// state write (partition.idle; docs/guarantee.md, "Idle partitions").
	// Default off: every partition's lease is taken.
	LeaveIdle bool

	hooks hooks
}

// speaker is a connection that can say which protocol it speaks
// (*source.Conn).
type speaker interface{ Speaks() string }

// job is one partition to drain.
type job struct {
	stream Stream
	topic  *source.Topic
	info   source.PartitionInfo
}

// Run drains once: setup (dial, resolve, join), one goroutine per partition
// (at most PartitionConcurrency at a time), then cleanup (lag, leave,
// close). It returns the summary, and an error when a partition or the
// connection failed; a run stopped by its context is not an error.
func (r *Runner) Run(ctx context.Context) (sum *Summary, err error) {
	start := r.now()
	sum = &Summary{Owner: r.Owner, Started: start.UTC()}
	r.hooks = newHooks(r.Hooks)
	defer func() {
		sum.DurationMS = r.now().Sub(start).Milliseconds()
		for _, h := range r.hooks.runs {
			h.OnRunEnd(sum, err)
		}
	}()
	if err := r.Options.Validate(); err != nil {
		return sum, err
	}
	conn, err := r.Dial(ctx)
	if err != nil {
		if stopped(ctx) == "signal" {
			sum.Stopped = "signal"
			return sum, nil
		}
		return sum, fmt.Errorf("drain: %w", err)
	}
	if sp, ok := conn.(speaker); ok {
		sum.Iggy = sp.Speaks()
	}
	topics, jobs, setupErr := r.setup(ctx, conn)
	sum.Groups = len(topics)
	errs, crashed := r.fanOut(ctx, conn, jobs, sum)
	if crashed {
		// A dead process neither leaves its groups nor releases leases; the
		// socket closing is all the server sees.
		conn.Close()
		sum.total()
		return sum, fmt.Errorf("drain: %w", errors.Join(errs...))
	}
	r.cleanup(ctx, conn, topics, jobs, sum)
	sum.Stopped = stopReason(ctx, sum)
	sum.total()
	if err := errors.Join(append([]error{setupErr}, errs...)...); err != nil {
		return sum, fmt.Errorf("drain: %w", err)
	}
	return sum, nil
}

// setup resolves every configured topic and joins its consumer group. A
// signal during setup is a stop, as in a partition: the topics not reached
// yet are drained by the next run. A deadline there stays an error: a run
// that cannot even start in its time has a stalled server to report.
func (r *Runner) setup(ctx context.Context, conn Conn) ([]*source.Topic, []job, error) {
	var topics []*source.Topic
	var jobs []job
	var errs error
	for _, s := range r.Options.Streams {
		for _, name := range s.Topics {
			t, err := conn.Topic(ctx, s.Name, name, s.Group)
			if err == nil {
				err = conn.Join(ctx, t)
			}
			if err != nil {
				if stopped(ctx) == "signal" {
					return topics, jobs, errs
				}
				errs = errors.Join(errs, err)
				continue
			}
			topics = append(topics, t)
			for _, p := range t.Partitions {
				jobs = append(jobs, job{stream: s, topic: t, info: p})
			}
		}
	}
	return topics, jobs, errs
}

// fanOut drains every job, PartitionConcurrency at a time. It reports
// whether a StepHook crashed the run.
func (r *Runner) fanOut(ctx context.Context, conn Conn, jobs []job, sum *Summary) ([]error, bool) {
	runCtx, abort := context.WithCancel(ctx)
	defer abort()
	sum.Partitions = make([]PartitionSummary, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, r.Options.PartitionConcurrency)
	// One extra object may be read while another uploads, across the whole
	// run: that overlap is what makes a lone partition fast, and sharing a
	// single slot keeps memory near one object per partition drained at once.
	readAhead := make(chan struct{}, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	crashed := false
	for i := range jobs {
		wg.Go(func() {
			ps := &sum.Partitions[i]
			*ps = newPartitionSummary(jobs[i])
			select {
			case sem <- struct{}{}:
			case <-runCtx.Done():
				ps.Stopped = "run ended before this partition started"
				return
			}
			defer func() { <-sem }()
			lease, err := r.drainPartition(runCtx, conn, jobs[i], readAhead, ps)
			errs[i] = err
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, ErrCrash) {
				crashed = true
				abort()
				return
			}
			sum.Leases += lease.taken
			sum.LeasesReleased += lease.released
		})
	}
	wg.Wait()
	// Every partition gives the slot back however it ended (committer.step):
	// one kept would have left the partitions drained after it without
	// read-ahead, which nothing else shows.
	select {
	case readAhead <- struct{}{}:
	default:
		r.logger().Error("internal error: the run's read-ahead slot was not given back; the partitions drained after the one that kept it read no object ahead")
	}
	return errs, crashed
}

// cleanup reads the partitions' offsets for the lag figures, leaves the
// groups and closes the connection, each step bounded by CleanupTimeout
// however the run's context ended.
func (r *Runner) cleanup(ctx context.Context, conn Conn, topics []*source.Topic, jobs []job, sum *Summary) {
	log := r.logger()
	refresh, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.Options.CleanupTimeout)
	defer cancel()
	for _, t := range topics {
		if err := conn.Refresh(refresh, t); err != nil {
			log.Warn("could not refresh partition offsets for the lag figure", "stream", t.Stream, "topic", t.Topic, "error", err.Error())
		}
	}
	for i := range sum.Partitions {
		sum.Partitions[i].Lag = lag(jobs[i].topic, &sum.Partitions[i])
	}
	leave, cancel2 := context.WithTimeout(context.WithoutCancel(ctx), r.Options.CleanupTimeout)
	defer cancel2()
	for _, t := range topics {
		err := conn.Leave(leave, t)
		switch {
		case errors.Is(err, source.ErrConnectionLost):
			// A stop cuts the connection under a call in flight (SDK v0.8.0
			// cannot interrupt one); the server ends the membership with it.
			log.Debug("the connection is closed, and the group membership with it", "group", t.Group, "stream", t.Stream, "topic", t.Topic)
		case err != nil:
			log.Warn("leaving the consumer group failed; the server drops the membership when the connection closes",
				"group", t.Group, "stream", t.Stream, "topic", t.Topic, "error", err.Error())
			continue
		}
		sum.GroupsLeft++
	}
	conn.Close()
}

// stopReason says why the run ended early, if it did.
func stopReason(ctx context.Context, sum *Summary) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "deadline"
	case ctx.Err() != nil:
		return "signal"
	}
	for _, p := range sum.Partitions {
		if p.Stopped == stopDeadline {
			return "deadline"
		}
	}
	return ""
}

func lag(t *source.Topic, ps *PartitionSummary) uint64 {
	for _, p := range t.Partitions {
		if p.ID != ps.Partition {
			continue
		}
		switch {
		case p.MessagesCount == 0, ps.Held:
			return 0
		case ps.Committed == nil:
			return p.CurrentOffset + 1
		case p.CurrentOffset > *ps.Committed:
			return p.CurrentOffset - *ps.Committed
		}
		return 0
	}
	return 0
}

func newPartitionSummary(j job) PartitionSummary {
	return PartitionSummary{Stream: j.topic.Stream, Topic: j.topic.Topic, Partition: j.info.ID}
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
