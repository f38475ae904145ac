package drain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// lease is the partition's state item as this run holds it: the one copy
// of the state, every write to it, and the lease those writes extend. The
// other stages read the state from here and write it through write.
type lease struct {
	p  *partition
	st state.State
	// names names the objects of st's generation; a write that moves the
	// generation on moves them too.
	names keys.PartitionNamer
	// lastWrite is when a state write last extended the lease; renewFail
	// when a renewal last failed (zero if the last one succeeded). Leases
	// run on the wall clock, as the state store's do, whatever Runner.Now says.
	lastWrite, renewFail time.Time
}

func newLease(p *partition, st state.State) *lease {
	names := p.r.Options.Names.Partition(p.bp.Stream, p.bp.Topic, p.bp.ID).Generation(st.Generation)
	return &lease{p: p, st: st, names: names, lastWrite: time.Now()}
}

// write applies one state write to the copy this run holds (the write
// also extends the lease) and then calls the step hooks of step, if any.
// A stop does not cut the write (see stateCtx).
func (l *lease) write(ctx context.Context, step Step, fn func(context.Context, state.State) (state.State, error)) error {
	sctx, cancel := l.p.stateCtx(ctx)
	defer cancel()
	st, err := fn(sctx, l.st)
	if err != nil {
		return err
	}
	if st.Generation != l.st.Generation {
		l.names = l.names.Generation(st.Generation)
	}
	l.st, l.lastWrite, l.renewFail = st, time.Now(), time.Time{}
	if step == "" {
		return nil
	}
	return l.p.hook(step)
}

// await runs fn while keeping the lease: a renewal every third of it. When
// the lease cannot be kept, fn's context is cancelled with the reason, so
// that nothing is written by a run that may no longer own the partition.
// fn runs beside the renewals, which write the state: it must not read it.
func (l *lease) await(ctx context.Context, fn func(ctx context.Context) error) error {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan error, 1)
	go func() { done <- fn(actx) }()
	timer := time.NewTimer(l.untilRenew())
	defer timer.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-timer.C:
			if err := l.keep(ctx); err != nil {
				cancel(err)
				<-done
				return err
			}
			timer.Reset(l.untilRenew())
		}
	}
}

func (l *lease) untilRenew() time.Duration {
	ttl := l.p.r.Options.Lease
	if !l.renewFail.IsZero() {
		return max(ttl/12, time.Millisecond) // retry soon, several times before a third is left
	}
	return max(time.Until(l.lastWrite.Add(ttl/3)), 0)
}

// keep renews the lease. A renewal that fails is retried until less than a
// third of the lease is left: then writing stops, before the lease can
// lapse and another run take the partition over.
func (l *lease) keep(ctx context.Context) error {
	ttl := l.p.r.Options.Lease
	sctx, cancel := l.p.stateCtx(ctx)
	st, err := l.p.r.State.Renew(sctx, l.st, ttl)
	cancel()
	now := time.Now()
	if err == nil {
		l.st, l.lastWrite, l.renewFail = st, now, time.Time{}
		return nil
	}
	if errors.Is(err, state.ErrLeaseLost) || ctx.Err() != nil {
		return fmt.Errorf("renew the partition lease: %w", err)
	}
	left := l.st.LeaseExpires.Sub(now)
	if left < ttl/3 {
		return fmt.Errorf("the partition lease could not be renewed and %s of it is left; stopped writing before it lapses: %w", left.Round(time.Millisecond), err)
	}
	l.renewFail = now
	l.p.log.Warn("renewing the partition lease failed; retrying", "left", left.Round(time.Millisecond), "error", err.Error())
	return nil
}

// expires is when the lease lapses; for a lease the run's last write gave
// back, when it would have lapsed. Another run may take a lease given back
// at once, and store the group's offset before this run does: this run's
// store then moves it back to the end of the run's last object until the
// next run, which stores the state's position again (position). No offset
// is archived twice or missed by that: the state, not the group, says
// where archiving goes on.
func (l *lease) expires() time.Time {
	if l.st.Owner == "" {
		return l.lastWrite.Add(l.p.r.Options.Lease)
	}
	return l.st.LeaseExpires
}

// release gives the lease back, bounded by CleanupTimeout however the run's
// context ended.
func (l *lease) release(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.p.r.Options.CleanupTimeout)
	defer cancel()
	return l.p.r.State.Release(rctx, l.st)
}
