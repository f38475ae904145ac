package drain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// nameMarker is the body of a name marker: the names a partition had
// under its stream and topic ids (see keys.PartitionNamer.NameMarker).
type nameMarker struct {
	Stream    string `json:"stream"`
	Topic     string `json:"topic"`
	Partition uint32 `json:"partition"`
	StreamID  uint32 `json:"stream_id"`
	TopicID   uint32 `json:"topic_id"`
}

// markNames writes the marker of the partition's names under its ids,
// create-only, once per process.
func (c *committer) markNames(ctx context.Context) error {
	key := c.names.NameMarker(c.p.topic.StreamID, c.p.topic.TopicID)
	if c.p.r.Marked.has(key) {
		return nil
	}
	return c.putOnce(ctx, key, "name marker", nameMarker{Stream: c.p.bp.Stream, Topic: c.p.bp.Topic, Partition: c.p.bp.ID, StreamID: c.p.topic.StreamID, TopicID: c.p.topic.TopicID})
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
func (c *committer) carryOver(ctx context.Context, cur uint64) (ok bool, floor uint32, err error) {
	old, from, found, floor, err := c.predecessor(ctx, cur)
	if err != nil || !found {
		return false, floor, err
	}
	// The earlier item's lease, taken, fences a run still writing under
	// the old names (one that stalled, or started before the rename): its
	// next state write meets another version. It is given back at the end.
	sctx, cancel := c.p.stateCtx(ctx)
	old, err = c.p.r.State.Acquire(sctx, old.Key, c.p.r.Owner, c.p.r.Options.Lease)
	cancel()
	if err != nil {
		return false, 0, fmt.Errorf("take the state of the partition's earlier names %s/%s to carry it over: %w", from.Stream, from.Topic, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.p.r.Options.CleanupTimeout)
		defer cancel()
		if err := c.p.r.State.Release(rctx, old); err != nil {
			c.p.log.Warn("releasing the state of the partition's earlier names failed; its lease expires by itself", "error", err.Error())
		}
	}()
	carried := state.Carried{HasWritten: old.HasWritten, LastWritten: old.LastWritten, LastTimestamp: old.LastTimestamp,
		Incarnation: old.Incarnation, Generation: old.Generation,
		Objects: old.Objects, Messages: old.Messages, Bytes: old.Bytes, GapMessages: old.GapMessages,
		FromStream: from.Stream, FromTopic: from.Topic}
	ts := old.LastTimestamp
	if in := old.Intent; in != nil && isGapKey(in.ObjectKey) {
		// A marker is a pure function of its range: written (again) under
		// its key, it holds the range whichever write landed first.
		if _, err := c.putGapMarker(ctx, in.ObjectKey, in.First, in.Last, gapCauseOf(in.ObjectKey)); err != nil && !errors.Is(err, s3store.ErrConflict) {
			return false, 0, fmt.Errorf("write the unfinished marker of %s/%s (the partition's earlier names): %w", from.Stream, from.Topic, err)
		}
		carried.HasWritten, carried.LastWritten, carried.LastTimestamp, ts = true, in.Last, 0, in.FirstTimestamp
	} else if in != nil {
		c.abortUploads(ctx, in.ObjectKey)
		size, exists, err := c.void(ctx, *in)
		if err != nil {
			return false, 0, fmt.Errorf("settle the unfinished object of %s/%s (the partition's earlier names): %w", from.Stream, from.Topic, err)
		}
		if exists && !c.isFence(in.ObjectKey, size) { // a fence is an earlier attempt's
			carried.HasWritten, carried.LastWritten, carried.LastTimestamp, ts = true, in.Last, 0, in.FirstTimestamp
		}
	}
	names := c.names.Generation(old.Generation)
	if carried.HasWritten {
		key := names.Renamed(0, carried.LastWritten, ts)
		m := marker{LastMissing: carried.LastWritten, Cause: causeRenamed,
			Reason: fmt.Sprintf("archived under the partition's earlier names: stream %q, topic %q", from.Stream, from.Topic)}
		if _, err := c.putMarker(ctx, key, m); err != nil && !errors.Is(err, s3store.ErrConflict) {
			return false, 0, fmt.Errorf("write the renamed marker %s: %w", key, err)
		}
	}
	if err := c.write(ctx, "", func(ctx context.Context, st state.State) (state.State, error) {
		return c.p.r.State.CarryOver(ctx, st, carried, c.p.r.Options.Lease)
	}); err != nil {
		return false, 0, err
	}
	c.names = c.names.Generation(c.st.Generation)
	c.ps.Generation, c.ps.RenamedFrom = c.st.Generation, from.Stream+"/"+from.Topic
	c.p.log.Warn("the partition was renamed on the server: its state carried over from its earlier names",
		"from_stream", from.Stream, "from_topic", from.Topic, "generation", c.st.Generation, "position", carried.LastWritten)
	return true, 0, nil
}

// causeRenamed is the cause in a renamed marker's body.
const causeRenamed = "renamed"

// predecessor finds the state item of the partition under an earlier pair
// of names that the name markers of its ids list, and whose incarnation is
// the live one. An item another one was carried over from is passed over:
// it stays as it was when carried, intent and all, and carrying it again
// would read again what its successor archived since (a topic renamed
// twice). Of the rest, the furthest along when several are live.
func (c *committer) predecessor(ctx context.Context, cur uint64) (st state.State, from nameMarker, found bool, floor uint32, err error) {
	prefix := c.names.NamesPrefix(c.p.topic.StreamID, c.p.topic.TopicID)
	own := c.names.NameMarker(c.p.topic.StreamID, c.p.topic.TopicID)
	var listed []string
	err = c.await(ctx, func(ctx context.Context) error {
		return c.p.r.Objects.List(ctx, prefix, func(key string, size int64) error {
			if key != own && size <= maxMarkerSize && len(listed) < 64 {
				listed = append(listed, key)
			}
			return nil
		})
	})
	if err != nil {
		return st, from, false, 0, fmt.Errorf("list the name markers under %q: %w", prefix, err)
	}
	type candidate struct {
		st   state.State
		from nameMarker
	}
	var candidates []candidate
	superseded := map[[2]string]bool{}
	for _, key := range listed {
		var body []byte
		if err := c.await(ctx, func(ctx context.Context) (err error) {
			body, err = c.p.r.Objects.Get(ctx, key)
			return err
		}); err != nil {
			return st, from, false, 0, fmt.Errorf("read the name marker %s: %w", key, err)
		}
		var m nameMarker
		if json.Unmarshal(body, &m) != nil || m.Partition != c.p.bp.ID || m.StreamID != c.p.topic.StreamID || m.TopicID != c.p.topic.TopicID ||
			(m.Stream == c.p.bp.Stream && m.Topic == c.p.bp.Topic) {
			continue // not the sink's, or this partition's own names
		}
		key := state.Key{Group: c.p.topic.Group, Stream: m.Stream, Topic: m.Topic, Partition: c.p.bp.ID}
		sctx, cancel := c.p.stateCtx(ctx)
		old, ok, err := c.p.r.State.Get(sctx, key)
		cancel()
		if err != nil {
			return st, from, false, 0, fmt.Errorf("read the state of %s (the partition's earlier names): %w", key, err)
		}
		if !ok || old.Incarnation == 0 {
			continue
		}
		if old.CarriedFromStream != "" {
			superseded[[2]string{old.CarriedFromStream, old.CarriedFromTopic}] = true
		}
		candidates = append(candidates, candidate{old, m})
	}
	for _, cand := range candidates {
		if superseded[[2]string{cand.from.Stream, cand.from.Topic}] {
			continue
		}
		live, err := c.stateIsLive(ctx, cand.st, cur)
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
func (c *committer) stateIsLive(ctx context.Context, s state.State, cur uint64) (bool, error) {
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
	groupVouches := s.HasWritten && c.hasStored && c.stored <= c.p.info.CurrentOffset
	if ts == 0 {
		return groupVouches, nil // nothing recorded to look for (a carried or adopted position)
	}
	m, err := c.messageAt(ctx, off, "its earlier names' state could be checked")
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
