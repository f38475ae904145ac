package state

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock shared by a store and its test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 11, 30, 4, 0, 0, 123_000_000, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newStoreFunc returns an empty store reading time from now.
type newStoreFunc func(t *testing.T, now func() time.Time) Store

const ttl = 30 * time.Second

var testKey = Key{Group: "sink", Stream: "orders", Topic: "events", Partition: 3}

// runStoreSuite is the conformance suite every Store implementation must pass with identical results.
// skips maps a case name to why a stand-in cannot run it (a known gap of the stand-in, not of real DynamoDB).
func runStoreSuite(t *testing.T, newStore newStoreFunc, skips map[string]string) {
	ctx := context.Background()
	setup := func(t *testing.T) (Store, *fakeClock) {
		t.Helper()
		name := t.Name()[strings.LastIndex(t.Name(), "/")+1:]
		if why, ok := skips[name]; ok {
			t.Skip(why)
		}
		clock := newFakeClock()
		return newStore(t, clock.Now), clock
	}
	mustAcquire := func(t *testing.T, st Store, owner string) State {
		t.Helper()
		s, err := st.Acquire(ctx, testKey, owner, ttl)
		if err != nil {
			t.Fatalf("Acquire(%q): %v", owner, err)
		}
		return s
	}
	mustSetIntent := func(t *testing.T, st Store, s State, in Intent) State {
		t.Helper()
		s, err := st.SetIntent(ctx, s, in, ttl)
		if err != nil {
			t.Fatalf("SetIntent: %v", err)
		}
		return s
	}
	mustGet := func(t *testing.T, st Store) State {
		t.Helper()
		s, ok, err := st.Get(ctx, testKey)
		if err != nil || !ok {
			t.Fatalf("Get: ok=%v err=%v", ok, err)
		}
		return s
	}

	t.Run("AcquireFresh", func(t *testing.T) {
		st, clock := setup(t)
		if _, ok, err := st.Get(ctx, testKey); err != nil || ok {
			t.Fatalf("Get before any write: ok=%v err=%v, want missing", ok, err)
		}
		s := mustAcquire(t, st, "run-a")
		want := State{Key: testKey, Owner: "run-a", LeaseExpires: clock.Now().Add(ttl), Version: 1, UpdatedAt: clock.Now()}
		assertState(t, "Acquire", s, want)
		assertState(t, "Get", mustGet(t, st), want)
	})

	t.Run("AcquireOwnRenews", func(t *testing.T) {
		st, clock := setup(t)
		s1 := mustAcquire(t, st, "run-a")
		clock.Advance(10 * time.Second)
		s2 := mustAcquire(t, st, "run-a")
		want := s1
		want.Version, want.LeaseExpires, want.UpdatedAt = 2, clock.Now().Add(ttl), clock.Now()
		assertState(t, "second Acquire", s2, want)
	})

	t.Run("AcquireHeldByLiveOwner", func(t *testing.T) {
		st, clock := setup(t)
		s := mustAcquire(t, st, "run-a")
		clock.Advance(ttl - time.Millisecond)
		_, err := st.Acquire(ctx, testKey, "run-b", ttl)
		if !errors.Is(err, ErrLeaseHeld) {
			t.Fatalf("Acquire by run-b: err = %v, want ErrLeaseHeld", err)
		}
		exp := s.LeaseExpires.Format(time.RFC3339Nano)
		if !strings.Contains(err.Error(), `"run-a"`) || !strings.Contains(err.Error(), exp) {
			t.Errorf("error %q should name holder run-a and expiry %s", err, exp)
		}
		assertState(t, "Get after refused Acquire", mustGet(t, st), s)
	})

	t.Run("ExpiredLeaseTakeover", func(t *testing.T) {
		st, clock := setup(t)
		a := mustAcquire(t, st, "run-a")
		clock.Advance(ttl) // a lease is expired from its expiry instant on
		b, err := st.Acquire(ctx, testKey, "run-b", ttl)
		if err != nil {
			t.Fatalf("Acquire of expired lease: %v", err)
		}
		want := a
		want.Owner, want.Version, want.LeaseExpires, want.UpdatedAt = "run-b", 2, clock.Now().Add(ttl), clock.Now()
		assertState(t, "takeover", b, want)
		if _, err := st.SetIntent(ctx, a, Intent{First: 0, Last: 9, ObjectKey: "k"}, ttl); !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("SetIntent by the old owner: err = %v, want ErrLeaseLost", err)
		}
		if _, err := st.Renew(ctx, a, ttl); !errors.Is(err, ErrLeaseLost) || !strings.Contains(err.Error(), "run-b") {
			t.Fatalf("Renew by the old owner: err = %v, want ErrLeaseLost naming run-b", err)
		}
		assertState(t, "Get", mustGet(t, st), b)
	})

	t.Run("IntentCompleteFlow", func(t *testing.T) {
		st, clock := setup(t)
		s := mustAcquire(t, st, "run-a")
		clock.Advance(time.Second)
		in1 := Intent{First: 0, Last: 99, ObjectKey: "p/00003-0-99.jsonl"}
		s = mustSetIntent(t, st, s, in1)
		want := State{Key: testKey, Owner: "run-a", Version: 2, LeaseExpires: clock.Now().Add(ttl), UpdatedAt: clock.Now(), Intent: &in1}
		assertState(t, "SetIntent", s, want)
		assertState(t, "Get after SetIntent", mustGet(t, st), want)

		clock.Advance(time.Second)
		s, err := st.Complete(ctx, s, Done{Messages: 100, Bytes: 5000}, ttl)
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		want = State{Key: testKey, Owner: "run-a", Version: 3, LeaseExpires: clock.Now().Add(ttl), UpdatedAt: clock.Now(),
			HasWritten: true, LastWritten: 99, Objects: 1, Messages: 100, Bytes: 5000}
		assertState(t, "Complete", s, want)

		in2 := Intent{First: 100, Last: 149, ObjectKey: "p/00003-100-149.jsonl"}
		if s, err = st.SetIntent(ctx, s, in2, ttl); err != nil {
			t.Fatalf("second SetIntent: %v", err)
		}
		if s, err = st.Complete(ctx, s, Done{Messages: 47, Bytes: 2000, GapMessages: 3}, ttl); err != nil {
			t.Fatalf("second Complete: %v", err)
		}
		want.Version, want.LastWritten, want.Objects, want.Messages, want.Bytes, want.GapMessages = 5, 149, 2, 147, 7000, 3
		assertState(t, "second Complete", s, want)
		assertState(t, "Get", mustGet(t, st), want)
	})

	t.Run("Skip", func(t *testing.T) {
		st, _ := setup(t)
		s := mustAcquire(t, st, "run-a")
		s, err := st.Skip(ctx, s, 41, 0, ttl) // adopt the group's offset on a fresh partition
		if err != nil {
			t.Fatalf("Skip on fresh state: %v", err)
		}
		if !s.HasWritten || s.LastWritten != 41 || s.GapMessages != 0 || s.Version != 2 {
			t.Fatalf("after Skip(41, 0): %+v", s)
		}
		if s, err = st.SetIntent(ctx, s, Intent{First: 42, Last: 50, ObjectKey: "k"}, ttl); err != nil {
			t.Fatalf("SetIntent after Skip: %v", err)
		}
		if s, err = st.Complete(ctx, s, Done{Messages: 9, Bytes: 90}, ttl); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if s, err = st.Skip(ctx, s, 60, 10, ttl); err != nil { // retention removed 51..60
			t.Fatalf("Skip over a gap: %v", err)
		}
		if s.LastWritten != 60 || s.GapMessages != 10 || s.Objects != 1 || s.Messages != 9 {
			t.Fatalf("after Skip(60, 10): %+v", s)
		}
		assertState(t, "Get", mustGet(t, st), s)
	})

	t.Run("Abandon", func(t *testing.T) {
		st, _ := setup(t)
		s := mustAcquire(t, st, "run-a")
		s, err := st.Skip(ctx, s, 9, 0, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Abandon(ctx, s, ttl); err == nil {
			t.Fatal("Abandon without an intent succeeded")
		}
		if s, err = st.SetIntent(ctx, s, Intent{First: 10, Last: 19, ObjectKey: "k"}, ttl); err != nil {
			t.Fatal(err)
		}
		stale := s
		if s, err = st.Abandon(ctx, s, ttl); err != nil {
			t.Fatalf("Abandon: %v", err)
		}
		if s.Intent != nil || s.LastWritten != 9 || s.Objects != 0 {
			t.Fatalf("after Abandon: %+v, want no intent and LastWritten still 9", s)
		}
		if _, err := st.Abandon(ctx, stale, ttl); !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("Abandon with a stale state: %v, want ErrLeaseLost", err)
		}
		// The same range can be recorded again.
		if _, err = st.SetIntent(ctx, s, Intent{First: 10, Last: 12, ObjectKey: "k2"}, ttl); err != nil {
			t.Fatalf("SetIntent after Abandon: %v", err)
		}
	})

	t.Run("LargeOffsetsAndCounters", func(t *testing.T) {
		st, _ := setup(t)
		s := mustAcquire(t, st, "run-a")
		const high = math.MaxUint64 - 10 // DynamoDB N keeps 38 digits; no float rounding allowed
		s, err := st.Skip(ctx, s, high, math.MaxUint64/2+1, ttl)
		if err != nil {
			t.Fatalf("Skip: %v", err)
		}
		if s, err = st.SetIntent(ctx, s, Intent{First: high + 1, Last: math.MaxUint64, ObjectKey: "k"}, ttl); err != nil {
			t.Fatalf("SetIntent: %v", err)
		}
		if s, err = st.Complete(ctx, s, Done{Messages: 10, Bytes: math.MaxUint64 / 2}, ttl); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		got := mustGet(t, st)
		if got.LastWritten != math.MaxUint64 || got.Bytes != math.MaxUint64/2 || got.GapMessages != math.MaxUint64/2+1 {
			t.Fatalf("got last written %d bytes %d gaps %d; want %d, %d, %d", got.LastWritten, got.Bytes, got.GapMessages,
				uint64(math.MaxUint64), uint64(math.MaxUint64/2), uint64(math.MaxUint64/2+1))
		}
		if _, err := st.SetIntent(ctx, s, Intent{First: 0, Last: 0, ObjectKey: "k"}, ttl); err == nil {
			t.Fatal("SetIntent after the maximum offset succeeded")
		}
	})

	t.Run("RejectedWritesChangeNothing", func(t *testing.T) {
		st, _ := setup(t)
		fresh := mustAcquire(t, st, "run-a")
		written, err := st.Skip(ctx, fresh, 9, 0, ttl)
		if err != nil {
			t.Fatal(err)
		}
		withIntent, err := st.SetIntent(ctx, written, Intent{First: 10, Last: 19, ObjectKey: "k"}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		noOwner := withIntent
		noOwner.Owner = ""
		badKey := withIntent
		badKey.Key.Topic = ""
		tests := []struct {
			name    string
			call    func() error
			wantMsg string
		}{
			{"intent first after last", func() error {
				s := withIntent
				s.Intent = nil
				_, err := st.SetIntent(ctx, s, Intent{First: 20, Last: 10, ObjectKey: "k"}, ttl)
				return err
			}, "first offset 20 is after last offset 10"},
			{"intent over unfinished intent", func() error {
				_, err := st.SetIntent(ctx, withIntent, Intent{First: 20, Last: 29, ObjectKey: "k2"}, ttl)
				return err
			}, "unfinished intent 10..19"},
			{"intent with a gap", func() error {
				s := withIntent
				s.Intent = nil
				_, err := st.SetIntent(ctx, s, Intent{First: 11, Last: 19, ObjectKey: "k"}, ttl)
				return err
			}, "does not follow last written offset 9"},
			{"intent overlapping", func() error {
				s := withIntent
				s.Intent = nil
				_, err := st.SetIntent(ctx, s, Intent{First: 5, Last: 19, ObjectKey: "k"}, ttl)
				return err
			}, "does not follow last written offset 9"},
			{"intent without object key", func() error {
				s := withIntent
				s.Intent = nil
				_, err := st.SetIntent(ctx, s, Intent{First: 10, Last: 19}, ttl)
				return err
			}, "object key is empty"},
			{"complete without intent", func() error {
				s := withIntent
				s.Intent = nil
				_, err := st.Complete(ctx, s, Done{Messages: 1}, ttl)
				return err
			}, "no intent recorded"},
			{"skip with intent", func() error {
				_, err := st.Skip(ctx, withIntent, 30, 0, ttl)
				return err
			}, "unfinished intent 10..19"},
			{"skip backwards", func() error {
				s := withIntent
				s.Intent = nil
				_, err := st.Skip(ctx, s, 9, 0, ttl)
				return err
			}, "does not advance last written offset 9"},
			{"no owner", func() error {
				_, err := st.Renew(ctx, noOwner, ttl)
				return err
			}, "no lease owner"},
			{"zero ttl", func() error {
				_, err := st.Renew(ctx, withIntent, 0)
				return err
			}, "ttl 0s"},
			{"acquire without owner", func() error {
				_, err := st.Acquire(ctx, testKey, "", ttl)
				return err
			}, "owner is empty"},
			{"empty topic name", func() error {
				_, err := st.Complete(ctx, badKey, Done{}, ttl)
				return err
			}, "topic name is empty"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				err := tc.call()
				if err == nil || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantMsg)
				}
				assertState(t, "Get after rejected write", mustGet(t, st), withIntent)
			})
		}
	})

	t.Run("StaleStateCannotWrite", func(t *testing.T) {
		st, _ := setup(t)
		s1 := mustAcquire(t, st, "run-a")
		s2, err := st.SetIntent(ctx, s1, Intent{First: 0, Last: 9, ObjectKey: "k"}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		s3, err := st.Complete(ctx, s2, Done{Messages: 10, Bytes: 100}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		stale := []struct {
			name string
			call func() error
		}{
			{"renew v1", func() error { _, err := st.Renew(ctx, s1, ttl); return err }},
			{"skip v1", func() error { _, err := st.Skip(ctx, s1, 100, 0, ttl); return err }},
			{"intent v1", func() error {
				_, err := st.SetIntent(ctx, s1, Intent{First: 0, Last: 5, ObjectKey: "k"}, ttl)
				return err
			}},
			// A retried Complete must not count the object twice.
			{"complete v2 again", func() error { _, err := st.Complete(ctx, s2, Done{Messages: 10, Bytes: 100}, ttl); return err }},
		}
		for _, tc := range stale {
			t.Run(tc.name, func(t *testing.T) {
				err := tc.call()
				if !errors.Is(err, ErrLeaseLost) || !strings.Contains(err.Error(), "version moved") {
					t.Fatalf("err = %v, want ErrLeaseLost saying the version moved", err)
				}
				assertState(t, "Get", mustGet(t, st), s3)
			})
		}
	})

	t.Run("EditedStateRejected", func(t *testing.T) {
		st, _ := setup(t)
		s := mustAcquire(t, st, "run-a")
		forged := s
		forged.Intent = &Intent{First: 0, Last: 9, ObjectKey: "k"}
		if _, err := st.Complete(ctx, forged, Done{Messages: 10}, ttl); !errors.Is(err, ErrLeaseLost) || !strings.Contains(err.Error(), "stored intent does not match") {
			t.Fatalf("Complete with an intent that was never stored: err = %v, want ErrLeaseLost", err)
		}
		withIntent, err := st.SetIntent(ctx, s, Intent{First: 0, Last: 9, ObjectKey: "k"}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name string
			call func(State) error
		}{
			{"skip", func(s State) error { _, err := st.Skip(ctx, s, 5, 0, ttl); return err }},
			{"set intent", func(s State) error {
				_, err := st.SetIntent(ctx, s, Intent{First: 3, Last: 4, ObjectKey: "k2"}, ttl)
				return err
			}},
			{"complete other intent", func(s State) error {
				s.Intent = &Intent{First: 0, Last: 9, ObjectKey: "other"}
				_, err := st.Complete(ctx, s, Done{}, ttl)
				return err
			}},
			{"complete other range under the same key", func(s State) error {
				s.Intent = &Intent{First: 0, Last: 5, ObjectKey: "k"}
				_, err := st.Complete(ctx, s, Done{}, ttl)
				return err
			}},
			{"abandon other range under the same key", func(s State) error {
				s.Intent = &Intent{First: 0, Last: 12, ObjectKey: "k"}
				_, err := st.Abandon(ctx, s, ttl)
				return err
			}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				edited := withIntent
				edited.Intent = nil
				if err := tc.call(edited); !errors.Is(err, ErrLeaseLost) {
					t.Fatalf("err = %v, want ErrLeaseLost", err)
				}
				assertState(t, "Get", mustGet(t, st), withIntent)
			})
		}
	})

	t.Run("Renew", func(t *testing.T) {
		st, clock := setup(t)
		s := mustAcquire(t, st, "run-a")
		clock.Advance(20 * time.Second)
		r, err := st.Renew(ctx, s, time.Minute)
		if err != nil {
			t.Fatalf("Renew: %v", err)
		}
		want := s
		want.Version, want.LeaseExpires, want.UpdatedAt = 2, clock.Now().Add(time.Minute), clock.Now()
		assertState(t, "Renew", r, want)
		clock.Advance(50 * time.Second) // still inside the renewed lease, past the original one
		if _, err := st.Acquire(ctx, testKey, "run-b", ttl); !errors.Is(err, ErrLeaseHeld) {
			t.Fatalf("Acquire of renewed lease by run-b: err = %v, want ErrLeaseHeld", err)
		}
	})

	t.Run("CompleteRecordsNextIntent", func(t *testing.T) {
		st, clock := setup(t)
		s := mustAcquire(t, st, "run-a")
		in1 := Intent{First: 0, Last: 9, ObjectKey: "k-0-9"}
		s = mustSetIntent(t, st, s, in1)
		clock.Advance(time.Second)
		in2 := Intent{First: 10, Last: 24, ObjectKey: "k-10-24", FirstTimestamp: 1_700_000_000_000_010}
		s, err := st.Complete(ctx, s, Done{Messages: 10, Bytes: 70, Next: &in2, LastTimestamp: 1_700_000_000_000_009}, ttl)
		if err != nil {
			t.Fatalf("Complete with Next: %v", err)
		}
		want := State{Key: testKey, Owner: "run-a", Version: 3, LeaseExpires: clock.Now().Add(ttl), UpdatedAt: clock.Now(),
			HasWritten: true, LastWritten: 9, LastTimestamp: 1_700_000_000_000_009, Intent: &in2, Objects: 1, Messages: 10, Bytes: 70}
		assertState(t, "Complete with Next", s, want)
		assertState(t, "Get", mustGet(t, st), want)
		// The next intent must follow the completed one.
		bad := Intent{First: 26, Last: 30, ObjectKey: "k-26-30"}
		if _, err := st.Complete(ctx, s, Done{Messages: 15, Next: &bad}, ttl); err == nil || !strings.Contains(err.Error(), "not after 24") {
			t.Fatalf("Complete with a non-adjacent Next: err = %v", err)
		}
		if s, err = st.Complete(ctx, s, Done{Messages: 15, Bytes: 90}, ttl); err != nil {
			t.Fatalf("plain Complete: %v", err)
		}
		if s.Intent != nil || s.LastWritten != 24 || s.Objects != 2 {
			t.Fatalf("after plain Complete: %s", stateString(s))
		}
	})

	t.Run("CompleteReleases", func(t *testing.T) {
		st, clock := setup(t)
		s := mustAcquire(t, st, "run-a")
		in := Intent{First: 0, Last: 9, ObjectKey: "k-0-9"}
		s = mustSetIntent(t, st, s, in)
		next := Intent{First: 10, Last: 19, ObjectKey: "k-10-19"}
		if _, err := st.Complete(ctx, s, Done{Messages: 10, Next: &next, Release: true}, ttl); err == nil || !strings.Contains(err.Error(), "cannot release") {
			t.Fatalf("Complete releasing with a next intent: err = %v", err)
		}
		clock.Advance(time.Second)
		got, err := st.Complete(ctx, s, Done{Messages: 10, Bytes: 70, LastTimestamp: 1_700_000_000_000_009, Release: true}, ttl)
		if err != nil {
			t.Fatalf("Complete releasing: %v", err)
		}
		want := State{Key: testKey, Version: 3, UpdatedAt: clock.Now(), HasWritten: true, LastWritten: 9,
			LastTimestamp: 1_700_000_000_000_009, Objects: 1, Messages: 10, Bytes: 70}
		assertState(t, "Complete releasing", got, want)
		assertState(t, "Get", mustGet(t, st), want)
		if err := st.Release(ctx, got); err != nil { // what the run's end does: nothing left to give back
			t.Fatalf("Release after a releasing Complete: %v", err)
		}
		assertState(t, "Get after Release", mustGet(t, st), want)
		b, err := st.Acquire(ctx, testKey, "run-b", ttl) // at once, no expiry to wait for
		if err != nil {
			t.Fatalf("Acquire after a releasing Complete: %v", err)
		}
		if b.Owner != "run-b" || b.LastWritten != 9 || b.Intent != nil {
			t.Fatalf("Acquire after a releasing Complete: %s", stateString(b))
		}
		if _, err := st.SetIntent(ctx, got, Intent{First: 10, Last: 19, ObjectKey: "k-10-19"}, ttl); err == nil {
			t.Fatal("a released state wrote again")
		}
	})

	t.Run("AdoptAndReset", func(t *testing.T) {
		st, _ := setup(t)
		s := mustAcquire(t, st, "run-a")
		s, err := st.Adopt(ctx, s, 1700, ttl)
		if err != nil {
			t.Fatalf("Adopt: %v", err)
		}
		if s.Incarnation != 1700 || s.Generation != 0 {
			t.Fatalf("Adopt: %s", stateString(s))
		}
		if s, err = st.Adopt(ctx, s, 1750, ttl); err != nil || s.Incarnation != 1750 || s.Generation != 0 {
			t.Fatalf("second Adopt: %v %s", err, stateString(s))
		}
		if s, err = st.Skip(ctx, s, 41, 0, ttl); err != nil {
			t.Fatalf("Skip: %v", err)
		}
		in := Intent{First: 42, Last: 50, ObjectKey: "k"}
		pending := mustSetIntent(t, st, s, in)
		// The old incarnation's intent goes in the same write.
		if _, err := st.Reset(ctx, pending, 1800, 0, ttl); err == nil {
			t.Fatal("Reset to the state's own generation was accepted")
		}
		s, err = st.Reset(ctx, pending, 1800, 1, ttl)
		if err != nil {
			t.Fatalf("Reset: %v", err)
		}
		if s.Incarnation != 1800 || s.Generation != 1 || s.HasWritten || s.LastWritten != 0 || s.Intent != nil {
			t.Fatalf("Reset: %s", stateString(s))
		}
		assertState(t, "Get after Reset", mustGet(t, st), s)
		// The first offset of the new incarnation is 0 again.
		if s, err = st.SetIntent(ctx, s, Intent{First: 0, Last: 5, ObjectKey: "k2"}, ttl); err != nil {
			t.Fatalf("SetIntent at 0 after Reset: %v", err)
		}
		// S3 may already hold later generations (a state restored from an
		// old backup): the reset then skips past them.
		if s, err = st.Reset(ctx, s, 1900, 4, ttl); err != nil || s.Generation != 4 || s.Intent != nil {
			t.Fatalf("Reset past generations S3 holds: %v %s", err, stateString(s))
		}
		assertState(t, "Get after the second Reset", mustGet(t, st), s)
	})

	t.Run("CarryOver", func(t *testing.T) {
		st, _ := setup(t)
		s := mustAcquire(t, st, "run-a")
		from := Carried{HasWritten: true, LastWritten: 41, LastTimestamp: 1234, Incarnation: 1700, Generation: 2, Objects: 3, Messages: 42, Bytes: 4200, GapMessages: 1,
			FromStream: "app", FromTopic: "orders-v1"}
		if _, err := st.CarryOver(ctx, s, Carried{FromStream: "app", FromTopic: "orders-v1"}, ttl); err == nil {
			t.Fatal("a carry-over without an incarnation was accepted")
		}
		if _, err := st.CarryOver(ctx, s, Carried{Incarnation: 1700}, ttl); err == nil {
			t.Fatal("a carry-over without the names it came from was accepted")
		}
		s, err := st.CarryOver(ctx, s, from, ttl)
		if err != nil {
			t.Fatalf("CarryOver: %v", err)
		}
		if !s.HasWritten || s.LastWritten != 41 || s.LastTimestamp != 1234 || s.Incarnation != 1700 || s.Generation != 2 ||
			s.Objects != 3 || s.Messages != 42 || s.Bytes != 4200 || s.GapMessages != 1 || s.Intent != nil ||
			s.CarriedFromStream != "app" || s.CarriedFromTopic != "orders-v1" {
			t.Fatalf("CarryOver: %s", stateString(s))
		}
		assertState(t, "Get after CarryOver", mustGet(t, st), s)
		if _, err := st.CarryOver(ctx, s, from, ttl); err == nil {
			t.Fatal("a second carry-over into a state with a position was accepted")
		}
		if _, err := st.SetIntent(ctx, s, Intent{First: 42, Last: 50, ObjectKey: "k"}, ttl); err != nil {
			t.Fatalf("SetIntent after the carried position: %v", err)
		}
	})

	t.Run("ReleaseOfStaleOwnCopyFails", func(t *testing.T) {
		st, _ := setup(t)
		a := mustAcquire(t, st, "run-a")
		if _, err := st.Renew(ctx, a, ttl); err != nil {
			t.Fatal(err)
		}
		// a is now one version behind the item, which is still ours: the
		// lease would stay until it expires, so Release must say so.
		if err := st.Release(ctx, a); !errors.Is(err, ErrStale) {
			t.Fatalf("Release of a stale copy: err = %v, want ErrStale", err)
		}
		if got := mustGet(t, st); got.Owner != "run-a" {
			t.Fatalf("owner %q after a failed release, want run-a", got.Owner)
		}
	})

	t.Run("Release", func(t *testing.T) {
		st, clock := setup(t)
		a := mustAcquire(t, st, "run-a")
		if err := st.Release(ctx, a); err != nil {
			t.Fatalf("Release: %v", err)
		}
		got := mustGet(t, st)
		want := a
		want.Owner, want.LeaseExpires, want.Version = "", time.Time{}, 2
		assertState(t, "Get after Release", got, want)
		if err := st.Release(ctx, a); err != nil {
			t.Fatalf("second Release: %v", err)
		}
		b, err := st.Acquire(ctx, testKey, "run-b", ttl) // no need to wait for expiry
		if err != nil {
			t.Fatalf("Acquire after Release: %v", err)
		}
		clock.Advance(time.Second)
		if err := st.Release(ctx, a); err != nil { // a's state is stale; b's lease must survive
			t.Fatalf("stale Release: %v", err)
		}
		assertState(t, "Get after stale Release", mustGet(t, st), b)
	})

	t.Run("ReleaseNeverClearsAnothersLease", func(t *testing.T) {
		st, clock := setup(t)
		a := mustAcquire(t, st, "run-a")
		clock.Advance(ttl + time.Second)
		b := mustAcquire(t, st, "run-b")
		forged := a
		forged.Version = b.Version // right version, wrong owner
		if err := st.Release(ctx, forged); err != nil {
			t.Fatalf("Release by run-a: %v", err)
		}
		assertState(t, "Get", mustGet(t, st), b)
	})

	t.Run("ConcurrentAcquireOneWinner", func(t *testing.T) {
		st, _ := setup(t)
		const n = 8
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			won  []string
			errs []error
		)
		for i := range n {
			wg.Go(func() {
				owner := fmt.Sprintf("run-%d", i)
				_, err := st.Acquire(ctx, testKey, owner, ttl)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					won = append(won, owner)
				} else if !errors.Is(err, ErrLeaseHeld) {
					errs = append(errs, err)
				}
			})
		}
		wg.Wait()
		if len(errs) > 0 || len(won) != 1 {
			t.Fatalf("winners %v, unexpected errors %v; want exactly one winner", won, errs)
		}
		if got := mustGet(t, st); got.Owner != won[0] || got.Version != 1 {
			t.Fatalf("stored owner %q version %d, want %q version 1", got.Owner, got.Version, won[0])
		}
	})

	t.Run("KeysWithSeparatorsAreDistinct", func(t *testing.T) {
		st, _ := setup(t)
		k1 := Key{Group: "g/a", Stream: "b", Topic: "t", Partition: 1}
		k2 := Key{Group: "g", Stream: "a/b", Topic: "t", Partition: 1}
		if _, err := st.Acquire(ctx, k1, "run-a", ttl); err != nil {
			t.Fatal(err)
		}
		s2, err := st.Acquire(ctx, k2, "run-b", ttl)
		if err != nil {
			t.Fatalf("Acquire of a different key with the same characters: %v", err)
		}
		if s2.Key != k2 || s2.Version != 1 {
			t.Fatalf("got %+v, want a fresh state for %v", s2, k2)
		}
	})

	t.Run("CanceledContext", func(t *testing.T) {
		st, _ := setup(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := st.Acquire(cctx, testKey, "run-a", ttl); !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire with canceled context: err = %v, want context.Canceled", err)
		}
	})
}

func assertState(t *testing.T, what string, got, want State) {
	t.Helper()
	if fmt.Sprint(stateString(got)) != fmt.Sprint(stateString(want)) {
		t.Fatalf("%s:\n got  %s\n want %s", what, stateString(got), stateString(want))
	}
}

func stateString(s State) string {
	in := "nil"
	if s.Intent != nil {
		in = fmt.Sprintf("%+v", *s.Intent)
	}
	return fmt.Sprintf("key=%s owner=%q expires=%s version=%d written=%v/%d@%d intent=%s incarnation=%d/%d objects=%d messages=%d bytes=%d gaps=%d carried_from=%q/%q updated=%s",
		s.Key, s.Owner, s.LeaseExpires.UTC().Format(time.RFC3339Nano), s.Version, s.HasWritten, s.LastWritten, s.LastTimestamp, in,
		s.Incarnation, s.Generation, s.Objects, s.Messages, s.Bytes, s.GapMessages, s.CarriedFromStream, s.CarriedFromTopic, s.UpdatedAt.UTC().Format(time.RFC3339Nano))
}
