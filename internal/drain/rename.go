package drain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// renames follows the partition across the names it had on the server: its
// stream and topic ids stay when they are renamed, and name markers under
// the ids list every pair of names the sink archived it under, so that a
// fresh state item under new names carries the old one's state over.
type renames struct {
	p      *partition
	l      *lease
	group  *groupOffset
	ps     *PartitionSummary
	marks  *markers
	writer *objectWriter
}

// nameMarker is the body of a name marker: the names a partition had
// under its stream and topic ids (see keys.PartitionNamer.NameMarker).
type nameMarker struct {
	Stream    string `json:"stream"`
	Topic     string `json:"topic"`
	Partition uint32 `json:"partition"`
	StreamID  uint32 `json:"stream_id"`
	TopicID   uint32 `json:"topic_id"`
}

// mark writes the marker of the partition's names under its ids,
// create-only, once per process.
func (rn *renames) mark(ctx context.Context) error {
	t := rn.p.topic
	key := rn.l.names.NameMarker(t.StreamID, t.TopicID)
	if rn.p.r.Marked.has(key) {
		return nil
	}
	return rn.marks.putOnce(ctx, key, "name marker", nameMarker{Stream: rn.p.bp.Stream, Topic: rn.p.bp.Topic, Partition: rn.p.bp.ID, StreamID: t.StreamID, TopicID: t.TopicID})
}

// carryOver looks, for a fresh state item, for the state the partition
// had under an earlier stream or topic name (renamed on the server; the
// ids stay), and carries it over (issue 21, item 6): without it, what the
// group had not stored yet would be archived again under the new names,
// and an uploaded intent orphaned. The earlier item's unfinished intent is
// settled where it is (its object kept if it reached S3, else its key
// fenced and its range read again); a renamed marker under the new names
// then says that offsets up to the carried position are archived under
// the old ones. Only a state whose incarnation is provably the live one is
// carried; false when none is.
//
// floor is the generation a fresh start under the new names begins at:
// above those of earlier names' states of another incarnation (a partition
// re-created, then renamed), so that a partition's generations count on
// across its names.
func (rn *renames) carryOver(ctx context.Context, cur uint64) (ok bool, floor uint32, err error) {
	old, from, found, floor, err := rn.predecessor(ctx, cur)
	if err != nil || !found {
		return false, floor, err
	}
	// The earlier item's lease, taken, fences a run still writing under
	// the old names (one that stalled, or started before the rename): its
	// next state write meets another version. It is given back at the end.
	sctx, cancel := rn.p.stateCtx(ctx)
	old, err = rn.p.r.State.Acquire(sctx, old.Key, rn.p.r.Owner, rn.p.r.Options.Lease)
	cancel()
	if err != nil {
		return false, 0, fmt.Errorf("take the state of the partition's earlier names %s/%s to carry it over: %w", from.Stream, from.Topic, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rn.p.r.Options.CleanupTimeout)
		defer cancel()
		if err := rn.p.r.State.Release(rctx, old); err != nil {
			rn.p.log.Warn("releasing the state of the partition's earlier names failed; its lease expires by itself", "error", err.Error())
		}
	}()
	carried, ts, err := rn.settleOld(ctx, old, from)
	if err != nil {
		return false, 0, err
	}
	if carried.HasWritten {
		key := rn.l.names.Generation(old.Generation).Renamed(0, carried.LastWritten, ts)
		m := marker{LastMissing: carried.LastWritten, Cause: causeRenamed,
			Reason: fmt.Sprintf("archived under the partition's earlier names: stream %q, topic %q", from.Stream, from.Topic)}
		if _, err := rn.marks.putMarker(ctx, key, m); err != nil && !errors.Is(err, s3store.ErrConflict) {
			return false, 0, fmt.Errorf("write the renamed marker %s: %w", key, err)
		}
	}
	if err := rn.l.write(ctx, "", func(ctx context.Context, st state.State) (state.State, error) {
		return rn.p.r.State.CarryOver(ctx, st, carried, rn.p.r.Options.Lease)
	}); err != nil {
		return false, 0, err
	}
	rn.ps.Generation, rn.ps.RenamedFrom = rn.l.st.Generation, from.Stream+"/"+from.Topic
	rn.p.log.Warn("the partition was renamed on the server: its state carried over from its earlier names",
		"from_stream", from.Stream, "from_topic", from.Topic, "generation", rn.l.st.Generation, "position", carried.LastWritten)
	return true, 0, nil
}

// settleOld is what the earlier names' state old carries over, with its
// unfinished intent settled where it is: a marker written (again) under its
// key, an object kept if it reached S3, else its key fenced. ts is the
// server time the renamed marker's folder is taken from.
func (rn *renames) settleOld(ctx context.Context, old state.State, from nameMarker) (state.Carried, uint64, error) {
	carried := state.Carried{HasWritten: old.HasWritten, LastWritten: old.LastWritten, LastTimestamp: old.LastTimestamp,
		Incarnation: old.Incarnation, Generation: old.Generation,
		Objects: old.Objects, Messages: old.Messages, Bytes: old.Bytes, GapMessages: old.GapMessages,
		FromStream: from.Stream, FromTopic: from.Topic}
	ts := old.LastTimestamp
	in := old.Intent
	switch {
	case in != nil && isGapKey(in.ObjectKey):
		// A marker is a pure function of its range: written (again) under
		// its key, it holds the range whichever write landed first.
		if _, err := rn.marks.putGapMarker(ctx, in.ObjectKey, in.First, in.Last, gapCauseOf(in.ObjectKey)); err != nil && !errors.Is(err, s3store.ErrConflict) {
			return carried, 0, fmt.Errorf("write the unfinished marker of %s/%s (the partition's earlier names): %w", from.Stream, from.Topic, err)
		}
		carried.HasWritten, carried.LastWritten, carried.LastTimestamp, ts = true, in.Last, 0, in.FirstTimestamp
	case in != nil && isUnitKey(in.ObjectKey):
		// Its value objects may be partly written under the earlier names:
		// the unit is finished there, unless its messages are gone.
		done, err := rn.writer.finishUnit(ctx, *in)
		if err != nil {
			return carried, 0, fmt.Errorf("finish the unfinished unit of %s/%s (the partition's earlier names): %w", from.Stream, from.Topic, err)
		}
		if done {
			carried.HasWritten, carried.LastWritten, carried.LastTimestamp, ts = true, in.Last, 0, in.FirstTimestamp
			break
		}
		fallthrough
	case in != nil:
		rn.marks.abortUploads(ctx, in.ObjectKey)
		size, exists, err := rn.marks.void(ctx, *in)
		if err != nil {
			return carried, 0, fmt.Errorf("settle the unfinished object of %s/%s (the partition's earlier names): %w", from.Stream, from.Topic, err)
		}
		if exists && !isFence(in.ObjectKey, size) { // a fence is an earlier attempt's
			carried.HasWritten, carried.LastWritten, carried.LastTimestamp, ts = true, in.Last, 0, in.FirstTimestamp
		}
	}
	return carried, ts, nil
}

// causeRenamed is the cause in a renamed marker's body.
const causeRenamed = "renamed"

// predecessor finds the state item of the partition under an earlier pair
// of names that the name markers of its ids list, and whose incarnation is
// the live one. An item another one was carried over from is passed over:
// it stays as it was when carried, intent and all, and carrying it again
// would read again what its successor archived since (a topic renamed
// twice). Of the rest, the furthest along when several are live.
func (rn *renames) predecessor(ctx context.Context, cur uint64) (st state.State, from nameMarker, found bool, floor uint32, err error) {
	listed, err := rn.nameMarkers(ctx)
	if err != nil {
		return st, from, false, 0, err
	}
	candidates, superseded, err := rn.candidates(ctx, listed)
	if err != nil {
		return st, from, false, 0, err
	}
	for _, cand := range candidates {
		if superseded[[2]string{cand.from.Stream, cand.from.Topic}] {
			continue
		}
		live, err := rn.stateIsLive(ctx, cand.st, cur)
		if err != nil {
			return st, from, false, 0, err
		}
		if live && (!found || position(cand.st) > position(st)) {
			st, from, found = cand.st, cand.from, true
		}
		if !live && cand.st.Generation < ^uint32(0) {
			floor = max(floor, cand.st.Generation+1)
		}
	}
	return st, from, found, floor, nil
}

// nameMarkers lists the keys of the name markers under the partition's
// ids but its own names' (at most 64).
func (rn *renames) nameMarkers(ctx context.Context) ([]string, error) {
	t := rn.p.topic
	prefix := rn.l.names.NamesPrefix(t.StreamID, t.TopicID)
	own := rn.l.names.NameMarker(t.StreamID, t.TopicID)
	var listed []string
	err := rn.l.await(ctx, func(ctx context.Context) error {
		return rn.p.r.Objects.List(ctx, prefix, func(key string, size int64) error {
			if key != own && size <= maxMarkerSize && len(listed) < 64 {
				listed = append(listed, key)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list the name markers under %q: %w", prefix, err)
	}
	return listed, nil
}

// predecessorCandidate is a state item of the partition under earlier names.
type predecessorCandidate struct {
	st   state.State
	from nameMarker
}

// candidates reads the name markers at keys and the state items of the
// names they list, and which of those names a later item was carried
// over from (superseded).
func (rn *renames) candidates(ctx context.Context, markerKeys []string) ([]predecessorCandidate, map[[2]string]bool, error) {
	var candidates []predecessorCandidate
	superseded := map[[2]string]bool{}
	t, bp := rn.p.topic, rn.p.bp
	for _, key := range markerKeys {
		var body []byte
		if err := rn.l.await(ctx, func(ctx context.Context) (err error) {
			body, err = rn.p.r.Objects.Get(ctx, key)
			return err
		}); err != nil {
			return nil, nil, fmt.Errorf("read the name marker %s: %w", key, err)
		}
		var m nameMarker
		if json.Unmarshal(body, &m) != nil || m.Partition != bp.ID || m.StreamID != t.StreamID || m.TopicID != t.TopicID ||
			(m.Stream == bp.Stream && m.Topic == bp.Topic) {
			continue // not the sink's, or this partition's own names
		}
		skey := state.Key{Group: t.Group, Stream: m.Stream, Topic: m.Topic, Partition: bp.ID}
		sctx, cancel := rn.p.stateCtx(ctx)
		old, ok, err := rn.p.r.State.Get(sctx, skey)
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("read the state of %s (the partition's earlier names): %w", skey, err)
		}
		if !ok || old.Incarnation == 0 {
			continue
		}
		if old.CarriedFromStream != "" {
			superseded[[2]string{old.CarriedFromStream, old.CarriedFromTopic}] = true
		}
		candidates = append(candidates, predecessorCandidate{old, m})
	}
	return candidates, superseded, nil
}

// position orders states by how far they archived.
func position(s state.State) uint64 {
	switch {
	case s.Intent != nil:
		return s.Intent.Last + 1
	case s.HasWritten:
		return s.LastWritten + 1
	}
	return 0
}

// stateIsLive reports whether another item's state is of the live
// incarnation: the same 0.10 incarnation number, else the same creation
// time, else (a 0.8.0 server re-stamps it on restart) the message it last
// recorded still at its offset with its server time, else (retention took
// it) a group offset in range, as in recreated: a rename keeps the group,
// a topic created anew under the ids comes with a new one. Ids are reused
// after a deletion, so without that evidence nothing is carried over.
func (rn *renames) stateIsLive(ctx context.Context, s state.State, cur uint64) (bool, error) {
	if exactIdentity(cur) && exactIdentity(s.Incarnation) {
		return cur == s.Incarnation, nil
	}
	if s.Incarnation == cur {
		return true, nil // the same creation time (a partition re-created has another)
	}
	off, ts := s.LastWritten, s.LastTimestamp
	if in := s.Intent; in != nil && in.FirstTimestamp != 0 {
		off, ts = in.First, in.FirstTimestamp
	} else if !s.HasWritten {
		ts = 0
	}
	groupVouches := s.HasWritten && rn.group.inRange()
	if ts == 0 {
		return groupVouches, nil // nothing recorded to look for (a carried or adopted position)
	}
	m, err := rn.p.messageAt(ctx, off, "its earlier names' state could be checked")
	if err != nil {
		return false, err
	}
	if m == nil {
		return false, nil
	}
	if same, known := recordedMessage(m, off, ts); known {
		return same, nil
	}
	return groupVouches, nil
}
