package drain

import (
	"context"
	"errors"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
)

// early is an object's upload begun beside the state write that records
// its intent (and marks the object before it written): the PUT goes out at
// once, but its last byte waits at a gate until that write is durable, so
// the store never holds an object whose intent no state records, and the
// write no longer stands between two uploads. Only objects rendered in
// memory go early; gaps, streamed objects and recoveries wait for the
// write as before.
type early struct {
	key    string
	gate   *s3store.Gate
	cancel context.CancelCauseFunc
	done   chan struct{}
	res    s3store.Result
	el     errorLines
	err    error
}

// open lets the upload land: its intent is durable.
func (e *early) open() { e.gate.Open() }

// abandon ends the upload, with nothing stored, and waits for it: its
// intent was not recorded, or the run stops before the object. Once it
// has ended (or was let land), a second call does nothing.
func (e *early) abandon(why error) {
	if e == nil {
		return
	}
	if why == nil {
		why = errors.New("abandoned")
	}
	e.gate.Fail(why)
	e.cancel(why)
	<-e.done
}

// wait returns the upload's outcome once it has ended; when ctx ends
// first (the lease could not be kept) the upload is cancelled and waited
// for, so nothing of it runs on after.
func (e *early) wait(ctx context.Context) (s3store.Result, errorLines, error) {
	select {
	case <-e.done:
	case <-ctx.Done():
		e.cancel(context.Cause(ctx))
		<-e.done
	}
	return e.res, e.el, e.err
}
