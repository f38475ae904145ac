package state

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Intent is an object the run is about to upload: offsets First..Last (inclusive) under ObjectKey.
type Intent struct {
	First, Last uint64
	ObjectKey   string
	// FirstTimestamp is the server time of message First (µs; 0 when
	// unknown): the partition must still hold that message for the intent
	// to be this incarnation's.
	FirstTimestamp uint64
}

// State is one partition's stored state as of Version.
type State struct {
	Key Key

	Owner        string
	LeaseExpires time.Time
	Version      int64 // increases on every successful write

	HasWritten  bool
	LastWritten uint64 // last offset durably written to S3 (inclusive)
	// LastTimestamp is the server time of message LastWritten (µs; 0 when
	// unknown), or after a gap marker of offsets Iggy no longer has (or
	// never had), of the first message after it: evidence of which
	// incarnation of the partition the position belongs to.
	LastTimestamp uint64

	Intent *Intent // unfinished object, nil when none

	// Incarnation identifies the partition these offsets belong to: its
	// creation time in Iggy (microseconds), or, from 2^52 up, 2^52 plus
	// Iggy 0.10's incarnation number of it; 0 until first recorded. A partition
	// deleted and re-created under the same name is a new incarnation
	// whose offsets start again at 0.
	Incarnation uint64
	// Generation counts the incarnations this state has moved through; the
	// objects of generation g > 0 carry it in their names, so they never
	// collide with an earlier incarnation's.
	Generation uint32

	Objects, Messages, Bytes, GapMessages uint64

	// CarriedFromStream and CarriedFromTopic name the item this state was
	// carried over from (the partition's earlier names, before a rename on
	// the server); "" when it was not. That item stays as it was, so a later
	// carry-over knows it for superseded by this one.
	CarriedFromStream, CarriedFromTopic string

	UpdatedAt time.Time

	// unknown holds the attributes of the stored item this version does not
	// know (a later version's), so that a write, which stores the whole
	// item, keeps them. Read-only once decoded.
	unknown map[string]types.AttributeValue
}

// Done is what a completed object added.
type Done struct {
	Messages, Bytes uint64
	GapMessages     uint64
	// LastTimestamp is the server time of the object's last message, or
	// for a gap marker of the first message after it (0 when unknown, and
	// for a skip marker); it becomes State.LastTimestamp.
	LastTimestamp uint64
	// Next, when set, records the next object's intent in the same write:
	// in steady state one conditional write per object.
	Next *Intent
	// Release gives the lease back in the same write, as Release does: the
	// run writes nothing more to the partition's state. Not with Next.
	Release bool
}

// Carried is what CarryOver moves from one item to another.
type Carried struct {
	HasWritten                            bool
	LastWritten, LastTimestamp            uint64
	Incarnation                           uint64
	Generation                            uint32
	Objects, Messages, Bytes, GapMessages uint64
	// FromStream and FromTopic name the item carried over; they become
	// State.CarriedFromStream and CarriedFromTopic.
	FromStream, FromTopic string
}

// Errors a Store returns wrapped; test them with errors.Is.
var (
	ErrLeaseHeld    = errors.New("state: partition lease held by another live owner")
	ErrLeaseLost    = errors.New("state: lease lost (another owner took over or the version moved)")
	ErrTableMissing = errors.New("state: table does not exist")
	// ErrStale comes with ErrLeaseLost when the item is still ours but at a
	// later version than the caller's copy: the caller lost track of a write.
	// Release reports it, since the lease then stays until it expires.
	ErrStale = errors.New("state: the copy is stale (the item moved on under the same owner)")
)

// Store is the per-partition state the drain reads and advances. Every write but Acquire is
// conditional on the State the caller holds (owner and version), so a stale State cannot write.
type Store interface {
	// Acquire takes (or renews, if already ours, or takes over, if expired) the lease.
	// ErrLeaseHeld (wrapped, naming the holder and its expiry) when another owner's lease is live.
	// owner must be unique per run (e.g. the Lambda request ID): two runs sharing it share the lease.
	Acquire(ctx context.Context, key Key, owner string, ttl time.Duration) (State, error)
	// SetIntent records an unfinished object; condition: owner and version match s. Extends the lease by ttl.
	SetIntent(ctx context.Context, s State, in Intent, ttl time.Duration) (State, error)
	// Complete marks s.Intent written: LastWritten = Intent.Last, LastTimestamp = d.LastTimestamp, HasWritten = true, counters += d,
	// Objects++, and the intent becomes d.Next (nil clears it). Extends the lease by ttl, or with d.Release gives it back.
	Complete(ctx context.Context, s State, d Done, ttl time.Duration) (State, error)
	// Abandon drops the unfinished intent without advancing LastWritten, so
	// its range is read again (retention removed part of it before upload).
	Abandon(ctx context.Context, s State, ttl time.Duration) (State, error)
	// Skip advances LastWritten without an object (a reported retention gap, or adopting the group's
	// offset when it is ahead); GapMessages += gapMessages; LastTimestamp becomes unknown (0).
	Skip(ctx context.Context, s State, lastWritten uint64, gapMessages uint64, ttl time.Duration) (State, error)
	// Adopt records incarnation as the state's own without moving its position: the first time the
	// partition's creation time is seen, or when the server reports another one for what the group's
	// offsets show is the same partition.
	Adopt(ctx context.Context, s State, incarnation uint64, ttl time.Duration) (State, error)
	// Reset moves the state to a new incarnation of its partition: Generation set to generation
	// (above the state's: usually one more, more when S3 already holds later generations of the
	// partition), Incarnation set, position and intent cleared (HasWritten false, LastWritten 0,
	// no intent); counters are kept.
	// Dropping the old incarnation's intent in the same write leaves no state in which it is gone
	// but the incarnation not yet moved on.
	Reset(ctx context.Context, s State, incarnation uint64, generation uint32, ttl time.Duration) (State, error)
	// CarryOver gives a fresh state (no incarnation, position, intent or generation) what
	// another item recorded: the same partition under its earlier stream or topic name (renamed
	// on the server). Position, incarnation, generation and counters are from's; from's intent
	// is not carried (the caller settles it first and passes the position that leaves).
	CarryOver(ctx context.Context, s State, from Carried, ttl time.Duration) (State, error)
	// Renew extends the lease by ttl.
	Renew(ctx context.Context, s State, ttl time.Duration) (State, error)
	// Release clears the lease if still ours (no error if another owner holds it or it was already
	// released; never clears someone else's lease). A stale copy of our own lease is an error wrapping
	// ErrStale: the lease then stays until it expires.
	Release(ctx context.Context, s State) error
	// Get reads the state; false when the partition has none yet.
	Get(ctx context.Context, key Key) (State, bool, error)
}

// The checks below run before any write, identically in both stores; they reject what would
// break the no-gap/no-overlap rule, so a buggy caller gets an error instead of a bad archive.

func checkAcquire(key Key, owner string, ttl time.Duration) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if owner == "" {
		return fmt.Errorf("state: acquire %s: owner is empty", key)
	}
	return checkTTL("acquire", key, ttl)
}

func checkTTL(op string, key Key, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("state: %s %s: lease ttl %v is below 1ms", op, key, ttl)
	}
	return nil
}

func checkHeld(op string, s State, ttl time.Duration) error {
	if err := s.Key.Validate(); err != nil {
		return err
	}
	if s.Owner == "" {
		return fmt.Errorf("state: %s %s: state has no lease owner (call Acquire first)", op, s.Key)
	}
	return checkTTL(op, s.Key, ttl)
}

func checkSetIntent(s State, in Intent, ttl time.Duration) error {
	if err := checkHeld("set intent", s, ttl); err != nil {
		return err
	}
	switch {
	case in.ObjectKey == "":
		return fmt.Errorf("state: set intent %s: object key is empty", s.Key)
	case in.First > in.Last:
		return fmt.Errorf("state: set intent %s: first offset %d is after last offset %d", s.Key, in.First, in.Last)
	case s.Intent != nil:
		return fmt.Errorf("state: set intent %s: unfinished intent %d..%d (%s) must be completed first",
			s.Key, s.Intent.First, s.Intent.Last, s.Intent.ObjectKey)
	case s.HasWritten && s.LastWritten == math.MaxUint64:
		return fmt.Errorf("state: set intent %s: last written offset is the maximum offset", s.Key)
	case s.HasWritten && in.First != s.LastWritten+1:
		return fmt.Errorf("state: set intent %s: first offset %d does not follow last written offset %d (record a gap with Skip)",
			s.Key, in.First, s.LastWritten)
	}
	return nil
}

func checkComplete(s State, d Done, ttl time.Duration) error {
	if err := checkHeld("complete", s, ttl); err != nil {
		return err
	}
	if s.Intent == nil {
		return fmt.Errorf("state: complete %s: no intent recorded (call SetIntent before uploading)", s.Key)
	}
	if d.Release && d.Next != nil {
		return fmt.Errorf("state: complete %s: cannot release the lease and record the next intent in one write", s.Key)
	}
	if n := d.Next; n != nil {
		switch {
		case n.ObjectKey == "":
			return fmt.Errorf("state: complete %s: next intent's object key is empty", s.Key)
		case n.First > n.Last:
			return fmt.Errorf("state: complete %s: next intent's first offset %d is after its last offset %d", s.Key, n.First, n.Last)
		case s.Intent.Last == math.MaxUint64 || n.First != s.Intent.Last+1:
			return fmt.Errorf("state: complete %s: next intent starts at %d, not after %d", s.Key, n.First, s.Intent.Last)
		}
	}
	return nil
}

func checkIncarnation(op string, s State, incarnation uint64, ttl time.Duration) error {
	if err := checkHeld(op, s, ttl); err != nil {
		return err
	}
	if incarnation == 0 {
		return fmt.Errorf("state: %s %s: incarnation 0 is reserved for \"none recorded\"", op, s.Key)
	}
	return nil
}

func checkReset(s State, incarnation uint64, generation uint32, ttl time.Duration) error {
	if err := checkIncarnation("reset", s, incarnation, ttl); err != nil {
		return err
	}
	if generation <= s.Generation {
		return fmt.Errorf("state: reset %s: generation %d does not follow generation %d", s.Key, generation, s.Generation)
	}
	return nil
}

func checkAbandon(s State, ttl time.Duration) error {
	if err := checkHeld("abandon", s, ttl); err != nil {
		return err
	}
	if s.Intent == nil {
		return fmt.Errorf("state: abandon %s: no intent recorded", s.Key)
	}
	return nil
}

func checkSkip(s State, lastWritten uint64, ttl time.Duration) error {
	if err := checkHeld("skip", s, ttl); err != nil {
		return err
	}
	if s.Intent != nil {
		return fmt.Errorf("state: skip %s: unfinished intent %d..%d (%s) must be completed first",
			s.Key, s.Intent.First, s.Intent.Last, s.Intent.ObjectKey)
	}
	if s.HasWritten && lastWritten <= s.LastWritten {
		return fmt.Errorf("state: skip %s: offset %d does not advance last written offset %d", s.Key, lastWritten, s.LastWritten)
	}
	return nil
}

// msTime is t at the millisecond precision both stores keep, in UTC.
func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func (s State) clone() State {
	if s.Intent != nil {
		in := *s.Intent
		s.Intent = &in
	}
	return s
}

func checkCarryOver(s State, from Carried, ttl time.Duration) error {
	if err := checkHeld("carry over", s, ttl); err != nil {
		return err
	}
	switch {
	case s.Incarnation != 0 || s.HasWritten || s.Intent != nil || s.Generation != 0:
		return fmt.Errorf("state: carry over %s: the state is not fresh (it recorded a position or an incarnation)", s.Key)
	case from.Incarnation == 0:
		return fmt.Errorf("state: carry over %s: the state carried over has no incarnation", s.Key)
	case from.FromStream == "" || from.FromTopic == "":
		return fmt.Errorf("state: carry over %s: the names of the item carried over are missing", s.Key)
	}
	return nil
}

// The changes the writes make, shared by both stores so that they record
// the same State for the same call.

func setIntent(in Intent) func(*State) { return func(s *State) { s.Intent = &in } }

func complete(d Done) func(*State) {
	return func(s *State) {
		s.LastWritten, s.HasWritten, s.Intent, s.LastTimestamp = s.Intent.Last, true, nil, d.LastTimestamp
		if d.Next != nil {
			next := *d.Next
			s.Intent = &next
		}
		s.Objects++
		s.Messages += d.Messages
		s.Bytes += d.Bytes
		s.GapMessages += d.GapMessages
		if d.Release {
			release(s)
		}
	}
}

// leaseAfter is the lease duration a write of done stores: none when it
// releases the lease.
func leaseAfter(d Done, ttl time.Duration) time.Duration {
	if d.Release {
		return 0
	}
	return ttl
}

func abandon(s *State) { s.Intent = nil }

func skip(lastWritten, gapMessages uint64) func(*State) {
	return func(s *State) {
		s.LastWritten, s.HasWritten, s.LastTimestamp = lastWritten, true, 0
		s.GapMessages += gapMessages
	}
}

func adopt(incarnation uint64) func(*State) { return func(s *State) { s.Incarnation = incarnation } }

func reset(incarnation uint64, generation uint32) func(*State) {
	return func(s *State) {
		s.Incarnation, s.Generation = incarnation, generation
		s.HasWritten, s.LastWritten, s.LastTimestamp, s.Intent = false, 0, 0, nil
	}
}

func carryOver(from Carried) func(*State) {
	return func(s *State) {
		s.HasWritten, s.LastWritten, s.LastTimestamp = from.HasWritten, from.LastWritten, from.LastTimestamp
		s.Incarnation, s.Generation = from.Incarnation, from.Generation
		s.Objects, s.Messages, s.Bytes, s.GapMessages = from.Objects, from.Messages, from.Bytes, from.GapMessages
		s.CarriedFromStream, s.CarriedFromTopic = from.FromStream, from.FromTopic
	}
}

func renew(*State) {}

func release(s *State) { s.Owner, s.LeaseExpires = "", time.Time{} }
