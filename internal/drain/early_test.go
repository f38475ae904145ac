package drain_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// refusingComplete fails the first write that marks an object written
// and records the next one's intent, after a pause in which the next
// object's early upload sends all it may.
type refusingComplete struct {
	drain.StateStore
	once sync.Once
}

var errRefused = errors.New("injected: the state store refused the write")

func (r *refusingComplete) Complete(ctx context.Context, s state.State, d state.Done, ttl time.Duration) (state.State, error) {
	refuse := false
	if d.Next != nil {
		r.once.Do(func() { refuse = true })
	}
	if refuse {
		time.Sleep(300 * time.Millisecond)
		return state.State{}, errRefused
	}
	return r.StateStore.Complete(ctx, s, d, ttl)
}

// refusingFirstIntent fails the write of the run's first intent, after a
// pause in which the first object's early upload sends all it may.
type refusingFirstIntent struct {
	drain.StateStore
	once sync.Once
}

func (r *refusingFirstIntent) SetIntent(ctx context.Context, s state.State, in state.Intent, ttl time.Duration) (state.State, error) {
	refuse := false
	r.once.Do(func() { refuse = true })
	if refuse {
		time.Sleep(300 * time.Millisecond)
		return state.State{}, errRefused
	}
	return r.StateStore.SetIntent(ctx, s, in, ttl)
}

// TestFirstObjectWaitsForItsIntent: the run's first object is uploaded
// beside the write of its intent, held at the gate. When that write
// fails, nothing of the object is stored, and a run with another rotation
// archives every offset once.
func TestFirstObjectWaitsForItsIntent(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		refusedIntentHoldsItsUpload(t, w, "first", "-00000000000000000000-00000000000000000019.jsonl",
			func(st drain.StateStore) drain.StateStore { return &refusingFirstIntent{StateStore: st} })
	})
}

// TestNextObjectWaitsForItsIntent: the next object's upload begins beside
// the state write that records its intent. When that write fails, nothing
// of the next object is stored, and a run with another rotation archives
// its offsets once; an object stored before its intent was durable would
// overlap that run's.
func TestNextObjectWaitsForItsIntent(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		refusedIntentHoldsItsUpload(t, w, "early", "-00000000000000000020-00000000000000000039.jsonl",
			func(st drain.StateStore) drain.StateStore { return &refusingComplete{StateStore: st} })
	})
}

// refusedIntentHoldsItsUpload runs topic's 60 messages at 20 per object
// with the state store refuse wraps, which refuses the state write that
// records one object's intent (the key ending in suffix; for a next object
// that write is the previous object's complete) while that object's upload
// is held at its gate: the upload must end with ErrGateFailed and nothing
// stored, and a run at 30 per object must then archive every offset once.
func refusedIntentHoldsItsUpload(t *testing.T, w *world, topic, suffix string, refuse func(drain.StateStore) drain.StateStore) {
	t.Helper()
	w.produce(topic, 1, 60, 100)
	set := w.settings(topic, topic)
	set["SINK_FILE_ROTATION"] = "messages"
	set["SINK_MAX_MESSAGES_PER_FILE"] = "20"
	cfg := w.config(set)
	s := w.sink(cfg, app.Options{State: refuse(w.stateStore(cfg.Plugin.StateTable))})
	puts := &putWatcher{ObjectStore: s.Objects, errs: map[string]error{}}
	s.Objects = puts
	if _, err := s.Run(context.Background()); !errors.Is(err, errRefused) {
		t.Fatalf("run whose intent write is refused: %v, want the refusal", err)
	}
	var held string
	for key, err := range puts.errs {
		if strings.HasSuffix(key, suffix) {
			held = key
			if !errors.Is(err, s3store.ErrGateFailed) {
				t.Fatalf("the upload of %s begun early returned %v, want it held and cancelled", key, err)
			}
		}
	}
	if held == "" {
		t.Fatalf("no upload of *%s was begun beside the write of its intent (puts: %v)", suffix, puts.errs)
	}
	if _, found, err := s.Objects.Head(context.Background(), held); err != nil || found {
		t.Fatalf("%s is stored (%v) although the write of its intent failed", held, err)
	}
	set["SINK_MAX_MESSAGES_PER_FILE"] = "30"
	next := w.sink(w.config(set), app.Options{})
	w.drainUntilQuiet(next, topic, 10)
	w.checkExactlyOnce(next, topic, "json_lines")
}

// overlapWatcher holds each partition's PutObject of the object ending in
// first until the upload of the same partition's object ending in second
// has begun (or 5 s have passed), and then fails it when fail is set: two
// uploads of one partition overlap only if the next begins while the
// previous is in flight.
type overlapWatcher struct {
	*putWatcher
	first, second string
	fail          error
	mu            sync.Mutex
	begun         map[string]chan struct{} // by the key up to the partition's number
	overlapped    map[string]bool
}

func newOverlapWatcher(objects app.ObjectStore, fail error) *overlapWatcher {
	return &overlapWatcher{putWatcher: &putWatcher{ObjectStore: objects, errs: map[string]error{}},
		first: "-00000000000000000000-00000000000000000019.jsonl", second: "-00000000000000000020-00000000000000000039.jsonl",
		fail: fail, begun: map[string]chan struct{}{}, overlapped: map[string]bool{}}
}

// partition returns the channel closed when the second object's upload
// of the partition whose keys start with prefix begins.
func (o *overlapWatcher) partition(prefix string) chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.begun[prefix] == nil {
		o.begun[prefix] = make(chan struct{})
	}
	return o.begun[prefix]
}

func (o *overlapWatcher) Put(ctx context.Context, obj s3store.Object, body []byte) (s3store.Result, error) {
	switch {
	case strings.HasSuffix(obj.Key, o.second):
		ch := o.partition(strings.TrimSuffix(obj.Key, o.second))
		o.mu.Lock()
		select {
		case <-ch:
		default:
			close(ch)
		}
		o.mu.Unlock()
	case strings.HasSuffix(obj.Key, o.first):
		prefix := strings.TrimSuffix(obj.Key, o.first)
		select {
		case <-o.partition(prefix):
			o.mu.Lock()
			o.overlapped[prefix] = true
			o.mu.Unlock()
		case <-time.After(5 * time.Second):
		}
		if o.fail != nil {
			return s3store.Result{}, o.fail
		}
	}
	return o.putWatcher.Put(ctx, obj, body)
}

// overlaps returns the partitions (key prefixes) whose two uploads
// overlapped.
func (o *overlapWatcher) overlaps() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var keys []string
	for k := range o.overlapped {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// overlapRun runs topic's 60 messages at 20 per object through an
// overlapWatcher on the first two objects, and returns it after the run.
func overlapRun(t *testing.T, w *world, topic string, fail error) (*overlapWatcher, *app.Sink, map[string]string, error) {
	t.Helper()
	w.produce(topic, 1, 60, 100)
	set := w.settings(topic, topic)
	set["SINK_FILE_ROTATION"] = "messages"
	set["SINK_MAX_MESSAGES_PER_FILE"] = "20"
	s := w.sink(w.config(set), app.Options{})
	o := newOverlapWatcher(s.Objects, fail)
	s.Objects = o
	_, err := s.Run(context.Background())
	return o, s, set, err
}

// TestNextUploadOverlapsThePrevious: the next object's upload begins as
// soon as the reader seals it, while the previous object's is still in
// flight (held at its gate until its intent is recorded), and the run
// archives every offset once.
func TestNextUploadOverlapsThePrevious(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		o, s, _, err := overlapRun(t, w, "overlap", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(o.overlaps()) != 1 {
			t.Fatalf("the upload of *%s did not begin while *%s was uploading", o.second, o.first)
		}
		w.checkExactlyOnce(s, "overlap", "json_lines")
	})
}

// TestFailedUploadAbandonsTheNext: when an object's upload fails while
// the next one's is held at its gate, the next one ends with nothing
// stored (its intent was never recorded), and a later run archives every
// offset once.
func TestFailedUploadAbandonsTheNext(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		injected := errors.New("injected: the store refused the upload")
		o, s, set, err := overlapRun(t, w, "overlapfail", injected)
		if !errors.Is(err, injected) {
			t.Fatalf("run whose first upload fails: %v, want the failure", err)
		}
		if len(o.overlaps()) != 1 {
			t.Fatalf("the upload of *%s did not begin while *%s was uploading", o.second, o.first)
		}
		held := ""
		for key, err := range o.errs {
			if strings.HasSuffix(key, o.second) {
				held = key
				if !errors.Is(err, s3store.ErrGateFailed) {
					t.Fatalf("the upload of %s returned %v, want it held and cancelled", key, err)
				}
			}
		}
		if held == "" {
			t.Fatalf("no upload of *%s (puts: %v)", o.second, o.errs)
		}
		if _, found, err := s.Objects.Head(context.Background(), held); err != nil || found {
			t.Fatalf("%s is stored (%v) although the object before it failed", held, err)
		}
		set["SINK_MAX_MESSAGES_PER_FILE"] = "30"
		next := w.sink(w.config(set), app.Options{})
		w.drainUntilQuiet(next, "overlapfail", 10)
		w.checkExactlyOnce(next, "overlapfail", "json_lines")
	})
}
