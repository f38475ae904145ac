package drain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// MarkedGenerations remembers, across the runs of one process, which
// generation markers are known to be in S3, so that each is written once
// per process rather than once per run. The zero value is ready; a nil
// one writes (create-only) every run.
type MarkedGenerations struct{ keys sync.Map }

// maxMarkerSize bounds what is read of a generation marker: a bigger
// object under its key is not the sink's.
const maxMarkerSize = 64 << 10

// generationMarker is the body of a generation marker: which incarnation
// of the partition generation Generation archives, and one of its messages
// (offset, server time), by which a later run knows that incarnation when
// the server's identity cannot tell (a creation time 0.8.0 re-stamps on
// restart).
type generationMarker struct {
	Stream      string `json:"stream"`
	Topic       string `json:"topic"`
	Partition   uint32 `json:"partition"`
	Generation  uint32 `json:"generation"`
	Identity    uint64 `json:"identity"`
	Incarnation string `json:"incarnation"`
	Offset      uint64 `json:"offset"`
	Timestamp   uint64 `json:"timestamp"`
}

// markGeneration writes the marker of the state's generation, create-only,
// if this process has not seen it yet. The first marker of a generation
// stays: a later one could only name another message of the same
// incarnation.
func (c *committer) markGeneration(ctx context.Context) error {
	key := c.names.GenerationMarker()
	if c.p.r.Marked.has(key) {
		return nil
	}
	off, ts := c.st.LastWritten, c.st.LastTimestamp
	if in := c.st.Intent; in != nil && in.FirstTimestamp != 0 {
		off, ts = in.First, in.FirstTimestamp
	} else if !c.st.HasWritten || ts == 0 {
		if c.p.info.MessagesCount == 0 {
			return nil // nothing to tell this incarnation by yet
		}
		// Not a bare poll: one answered from a stale assignment is empty,
		// and the generation's objects would go without their marker.
		m, err := c.messageAt(ctx, 0, "a message for the generation marker could be read")
		if err != nil {
			return fmt.Errorf("read a message for the generation marker: %w", err)
		}
		if m == nil {
			return nil // nothing to tell this incarnation by yet
		}
		off, ts = m.Offset, m.Timestamp
	}
	return c.putOnce(ctx, key, "generation marker", generationMarker{
		Stream: c.p.bp.Stream, Topic: c.p.bp.Topic, Partition: c.p.bp.ID, Generation: c.st.Generation,
		Identity: c.st.Incarnation, Incarnation: describeIdentity(c.st.Incarnation), Offset: off, Timestamp: ts,
	})
}

func (m *MarkedGenerations) has(key string) bool {
	if m == nil {
		return false
	}
	_, ok := m.keys.Load(key)
	return ok
}

// putOnce writes a marker create-only, the one already there winning, and
// remembers it for the process.
func (c *committer) putOnce(ctx context.Context, key, what string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = c.p.r.Objects.Put(ctx, s3store.Object{Key: key, ContentType: "application/json"}, body)
	if err != nil && !errors.Is(err, s3store.ErrConflict) {
		return fmt.Errorf("write the %s %s: %w", what, key, err)
	}
	if m := c.p.r.Marked; m != nil {
		m.keys.Store(key, struct{}{})
	}
	return nil
}

// liveGeneration is the generation the live incarnation (identity cur) has
// in S3, for a state that is about to start one: a fresh state item
// (floor 0) or a re-created partition (floor the state's generation + 1).
// The newest generation marker decides: its incarnation, if live, keeps its
// generation (its objects are adopted); else the next one is new. Without a
// marker at or above floor, floor.
func (c *committer) liveGeneration(ctx context.Context, cur uint64, floor uint32) (uint32, error) {
	names := c.names
	newest, found := uint32(0), false
	var size int64
	prefix := names.GenerationsPrefix()
	err := c.await(ctx, func(ctx context.Context) error {
		return c.p.r.Objects.List(ctx, prefix, func(key string, sz int64) error {
			if g, ok := names.ParseGenerationMarker(key); ok && (!found || g > newest) {
				newest, found, size = g, true, sz
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("list the generation markers under %q: %w", prefix, err)
	}
	if !found || newest < floor {
		return floor, nil
	}
	m, err := c.readMarker(ctx, newest, size)
	if err != nil {
		return 0, err
	}
	live, err := c.isLive(ctx, m, cur)
	if err != nil {
		return 0, err
	}
	if live {
		c.p.log.Info("S3 holds a generation of the live incarnation: going on with it", "generation", newest)
		return newest, nil
	}
	if newest == ^uint32(0) {
		return 0, fmt.Errorf("partition %s/%s/%d: generation limit reached", c.p.bp.Stream, c.p.bp.Topic, c.p.bp.ID)
	}
	return newest + 1, nil
}

// readMarker reads the generation marker of generation gen, size bytes.
func (c *committer) readMarker(ctx context.Context, gen uint32, size int64) (generationMarker, error) {
	var m generationMarker
	key := c.names.Generation(gen).GenerationMarker()
	if size > maxMarkerSize {
		return m, fmt.Errorf("generation marker %s is %d bytes, not one the sink wrote: remove it, or move it aside, to go on", key, size)
	}
	var body []byte
	err := c.await(ctx, func(ctx context.Context) (err error) {
		body, err = c.p.r.Objects.Get(ctx, key)
		return err
	})
	if err != nil {
		return m, fmt.Errorf("read the generation marker %s: %w", key, err)
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Generation != gen || m.Stream != c.p.bp.Stream || m.Topic != c.p.bp.Topic || m.Partition != c.p.bp.ID {
		return m, fmt.Errorf("generation marker %s does not describe generation %d of %s/%s/%d: remove it, or move it aside, to go on", key, gen, c.p.bp.Stream, c.p.bp.Topic, c.p.bp.ID)
	}
	return m, nil
}

// markerDisowns reports whether the marker of the state's generation ties
// it to another incarnation than cur: a state that archived nothing yet
// cannot tell a re-creation by its own record, but S3 may hold the
// generation's earlier objects (a state item leased before any run drained
// its partition, then the partition re-created).
func (c *committer) markerDisowns(ctx context.Context, cur uint64) (bool, error) {
	m, found, err := c.stateMarker(ctx)
	if err != nil || !found {
		return false, err
	}
	live, err := c.isLive(ctx, m, cur)
	return !live, err
}

// stateMarker reads the marker of the state's generation; false when S3
// has none.
func (c *committer) stateMarker(ctx context.Context) (generationMarker, bool, error) {
	key := c.names.GenerationMarker()
	var size int64
	var found bool
	err := c.await(ctx, func(ctx context.Context) (err error) {
		size, found, err = c.p.r.Objects.Head(ctx, key)
		return err
	})
	if err != nil || !found {
		return generationMarker{}, false, err
	}
	m, err := c.readMarker(ctx, c.st.Generation, size)
	return m, err == nil, err
}

// markerTells reports whether the marker of the state's generation ties it
// to the live incarnation by its message (known false when there is no
// marker, or when retention took its message: creation times are no
// evidence where a restart re-stamps them).
func (c *committer) markerTells(ctx context.Context) (live, known bool, err error) {
	m, found, err := c.stateMarker(ctx)
	if err != nil || !found {
		return false, false, err
	}
	at, err := c.messageAt(ctx, m.Offset, "its generation could be told")
	switch {
	case err != nil:
		return false, false, err
	case at == nil:
		return false, true, nil // the partition ends before the marker's message
	}
	live, known = recordedMessage(at, m.Offset, m.Timestamp)
	return live, known, nil
}

// isLive reports whether the marker's incarnation is the live one: the same
// 0.10 incarnation number, else the marker's message still at its offset
// with its server time; when retention took that message, the same
// creation time, or a group offset in range.
func (c *committer) isLive(ctx context.Context, m generationMarker, cur uint64) (bool, error) {
	if exactIdentity(cur) && exactIdentity(m.Identity) {
		return cur == m.Identity, nil
	}
	at, err := c.messageAt(ctx, m.Offset, "its generation could be told")
	switch {
	case err != nil:
		return false, err
	case at == nil:
		return false, nil // the partition ends before the marker's message
	}
	if same, known := recordedMessage(at, m.Offset, m.Timestamp); known {
		return same, nil
	}
	// Retention took the marker's message. The same creation time tells,
	// unless a 0.8.0 restart re-stamped it; then the group does, as in
	// recreated: a re-created topic comes with a new group, which has
	// stored nothing in range before the sink archived it.
	return m.Identity == cur || c.hasStored && c.stored <= c.p.info.CurrentOffset, nil
}

// startGeneration records cur as the incarnation of a fresh state item, at
// the generation S3 says it has.
func (c *committer) startGeneration(ctx context.Context, cur uint64) error {
	carried, floor, err := c.carryOver(ctx, cur)
	if err != nil {
		return err
	}
	if carried {
		return c.incarnation(ctx) // the carried state's, checked as any other
	}
	gen, err := c.liveGeneration(ctx, cur, floor)
	if err != nil {
		return err
	}
	if err := c.write(ctx, "", func(ctx context.Context, st state.State) (state.State, error) {
		if gen == 0 {
			return c.p.r.State.Adopt(ctx, st, cur, c.p.r.Options.Lease)
		}
		return c.p.r.State.Reset(ctx, st, cur, gen, c.p.r.Options.Lease)
	}); err != nil {
		return err
	}
	c.names = c.names.Generation(c.st.Generation)
	c.ps.Generation = c.st.Generation
	return c.markGeneration(ctx)
}
