package drain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// write applies one state write to the copy this committer owns (the write
// also extends the lease) and then calls the step hooks of step, if any.
// A stop does not cut the write (see stateCtx).
func (c *committer) write(ctx context.Context, step Step, fn func(context.Context, state.State) (state.State, error)) error {
	sctx, cancel := c.p.stateCtx(ctx)
	defer cancel()
	st, err := fn(sctx, c.st)
	if err != nil {
		return err
	}
	c.st, c.lastWrite, c.renewFail = st, time.Now(), time.Time{}
	if step == "" {
		return nil
	}
	return c.p.hook(step)
}

// skipTo moves the state's position to last without an object: the group
// or S3 shows that everything up to last is archived.
func (c *committer) skipTo(ctx context.Context, last uint64) error {
	if c.st.HasWritten && c.st.LastWritten >= last {
		return nil
	}
	return c.write(ctx, "", func(ctx context.Context, st state.State) (state.State, error) {
		return c.p.r.State.Skip(ctx, st, last, 0, c.p.r.Options.Lease)
	})
}

// release gives the lease back, bounded by CleanupTimeout however the run's
// context ended.
func (c *committer) release(ctx context.Context) error {
	if c.st.HasWritten {
		lw := c.st.LastWritten
		c.ps.Committed = &lw
	}
	c.ps.Generation = c.st.Generation
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.p.r.Options.CleanupTimeout)
	defer cancel()
	return c.p.r.State.Release(rctx, c.st)
}
func (c *committer) intentFor(s *sealed) state.Intent {
	key := c.names.Object(s.first, s.last, s.ts)
	switch {
	case s.gap && s.cause == CauseIggyHole:
		key = c.names.Hole(s.first, s.last, s.ts)
	case s.gap && s.cause == CauseTooLarge:
		key = c.names.TooLarge(s.first, s.last, s.ts)
	case s.gap && s.cause == CauseSkipped:
		key = c.names.Skip(s.first, s.last, s.ts)
	case s.gap:
		key = c.names.Gap(s.first, s.last, s.ts)
	}
	in := state.Intent{First: s.first, Last: s.last, ObjectKey: key}
	if !s.gap {
		in.FirstTimestamp = s.ts
	}
	return in
}

// await runs fn while keeping the lease: a renewal every third of it. When
// the lease cannot be kept, fn's context is cancelled with the reason, so
// that nothing is written by a run that may no longer own the partition.
func (c *committer) await(ctx context.Context, fn func(ctx context.Context) error) error {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan error, 1)
	go func() { done <- fn(actx) }()
	timer := time.NewTimer(c.untilRenew())
	defer timer.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-timer.C:
			if err := c.keepLease(ctx); err != nil {
				cancel(err)
				<-done
				return err
			}
			timer.Reset(c.untilRenew())
		}
	}
}

// receive waits for the reader's next object, keeping the lease; nil when
// the reader is done.
func (c *committer) receive(ctx context.Context, objects <-chan *sealed) (*sealed, error) {
	var s *sealed
	err := c.await(ctx, func(ctx context.Context) error {
		select {
		case s = <-objects:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	return s, err
}

func (c *committer) untilRenew() time.Duration {
	ttl := c.p.r.Options.Lease
	if !c.renewFail.IsZero() {
		return max(ttl/12, time.Millisecond) // retry soon, several times before a third is left
	}
	return max(time.Until(c.lastWrite.Add(ttl/3)), 0)
}

// keepLease renews the lease. A renewal that fails is retried until less
// than a third of the lease is left: then writing stops, before the lease
// can lapse and another run take the partition over.
func (c *committer) keepLease(ctx context.Context) error {
	ttl := c.p.r.Options.Lease
	sctx, cancel := c.p.stateCtx(ctx)
	st, err := c.p.r.State.Renew(sctx, c.st, ttl)
	cancel()
	now := time.Now()
	if err == nil {
		c.st, c.lastWrite, c.renewFail = st, now, time.Time{}
		return nil
	}
	if errors.Is(err, state.ErrLeaseLost) || ctx.Err() != nil {
		return fmt.Errorf("renew the partition lease: %w", err)
	}
	left := c.st.LeaseExpires.Sub(now)
	if left < ttl/3 {
		return fmt.Errorf("the partition lease could not be renewed and %s of it is left; stopped writing before it lapses: %w", left.Round(time.Millisecond), err)
	}
	c.renewFail = now
	c.p.log.Warn("renewing the partition lease failed; retrying", "left", left.Round(time.Millisecond), "error", err.Error())
	return nil
}
