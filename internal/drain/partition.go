package drain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// Why a partition stopped early without failing.
const (
	stopDeadline = "deadline: no new objects started with less than deadline_margin left"
	stopMoved    = "partition moved to another member"
)

// partition is what one partition's reader and committer share, read-only.
type partition struct {
	r      *Runner
	conn   Conn
	topic  *source.Topic
	info   source.PartitionInfo
	stream Stream
	bp     batch.Partition
	log    *slog.Logger
}

// hook calls the step hooks; an error is a crash.
func (p *partition) hook(s Step) error {
	for _, h := range p.r.hooks.steps {
		if err := h.OnStep(s, p.bp); err != nil {
			return fmt.Errorf("%w at %s on %s/%s/%d: %w", ErrCrash, s, p.bp.Stream, p.bp.Topic, p.bp.ID, err)
		}
	}
	return nil
}

// stateCtx is the context of one state store call. A stop (the run's
// context ending) must not cut a state write in flight: the store could
// still apply it after the run has released its lease — an Acquire would
// then hold the partition for a whole lease. Instead each call is bounded
// by CleanupTimeout past the run's end.
func (p *partition) stateCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	grace := p.r.Options.CleanupTimeout
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(grace, cancel)
		context.AfterFunc(sctx, func() { t.Stop() })
	})
	return sctx, func() { stop(); cancel() }
}

// outOfTime reports whether too little of the run is left to start an object.
func (p *partition) outOfTime(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < p.r.Options.DeadlineMargin
}

// stopped names why the run's context ended, or "" if it has not.
func stopped(ctx context.Context) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "deadline"
	case ctx.Err() != nil:
		return "signal"
	}
	return ""
}

// encoder returns a record encoder for this partition.
func (p *partition) encoder() (*batch.Encoder, error) {
	o := p.r.Options.Records
	o.Schema = p.stream.Schema
	return batch.NewEncoder(p.bp, o)
}

// errorObjects reports whether rejected records go to error objects
// (invalid_payload = "error_object").
func (p *partition) errorObjects() bool {
	return p.r.Options.Records.InvalidPayload == batch.InvalidErrorObject
}

// messageAt reads the message at off, or the first after it (retention);
// nil when the partition ends before off. A not-owned answer proves
// nothing: the assignment it was read against may predate a rebalance
// that handed the partition back. So ownership is asked, and an owned
// partition polled again; only a partition whose last offset is below off
// may still answer that way (0.8 answers a poll past the end of partition
// 0 holding one message like a not-owned one). ErrNotOwner names what
// could not be done.
func (p *partition) messageAt(ctx context.Context, off uint64, what string) (*batch.Message, error) {
	for attempt := 0; ; attempt++ {
		msgs, owned, err := p.conn.Poll(ctx, p.topic, p.info.ID, off, 1, nil)
		switch {
		case err != nil:
			return nil, err
		case owned && len(msgs) == 0:
			return nil, nil
		case owned:
			return &msgs[0], nil
		}
		mine, err := p.conn.Owns(ctx, p.topic, p.info.ID)
		switch {
		case err != nil:
			return nil, err
		case !mine:
			return nil, fmt.Errorf("%w: it moved before %s", source.ErrNotOwner, what)
		case attempt == 0:
			continue
		case p.info.CurrentOffset < off:
			return nil, nil
		}
		return nil, fmt.Errorf("%w: polls of offset %d answered as not owned, though the group assigns the partition to this member, before %s", source.ErrNotOwner, off, what)
	}
}

// timestampNear is the server time of the message at off (or the next
// one), for a marker's folder under a time template; now when there is
// none to read.
func (p *partition) timestampNear(ctx context.Context, off uint64) uint64 {
	msgs, _, err := p.conn.Poll(ctx, p.topic, p.info.ID, off, 1, nil)
	if err == nil && len(msgs) > 0 {
		return msgs[0].Timestamp
	}
	return uint64(time.Now().UnixMicro())
}

// gapCause tells why offsets up to last are missing: the partition's
// first message left is after them (retention deletes the oldest first),
// or it is before them and they were never written (a hole the server left).
// It asks the server, so it is called while the partition is this run's,
// when the gap is found; the marker's key then carries the answer (a hole
// marker or a gap marker), and a recovery reads it from there.
func (p *partition) gapCause(ctx context.Context, last uint64) (string, error) {
	first, _, err := p.conn.Poll(ctx, p.topic, p.info.ID, 0, 1, nil)
	if err != nil {
		return "", fmt.Errorf("find the partition's first message, to tell a retention gap from a hole: %w", err)
	}
	if len(first) > 0 && first[0].Offset <= last {
		return CauseIggyHole, nil
	}
	return CauseRetention, nil
}
