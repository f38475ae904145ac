package drain

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// history ties the state to the partition's live incarnation before
// anything is written: the state's own record, the generation markers in
// S3 and the names the partition had (renames) tell whether the partition
// is the one the state archived, or a re-created one that starts a new
// generation at offset 0.
type history struct {
	p       *partition
	l       *lease
	group   *groupOffset
	ps      *PartitionSummary
	marks   *markers
	writer  *objectWriter
	renames *renames
}

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

// exactBase offsets a recorded identity that is Iggy 0.10's incarnation
// number (source.IdentityBase).
const exactBase = source.IdentityBase

// identity is what the state records as the partition's incarnation.
func identity(p source.PartitionInfo) uint64 { return p.Identity() }

func exactIdentity(id uint64) bool { return id >= exactBase }

func describeIdentity(id uint64) string {
	if exactIdentity(id) {
		return fmt.Sprintf("incarnation %d", id-exactBase)
	}
	return fmt.Sprintf("created at %d µs", id)
}

// incarnation compares the partition's identity with the one the state
// recorded. A partition deleted and re-created under the same name starts
// again at offset 0: it becomes a new generation whose objects are named
// apart. On 0.8 and 0.9 the identity is the creation time, which a server
// may also report anew for the same partition (0.8.0 re-stamps it on
// restart): then the message the state last recorded is still there, and
// the new time is adopted. On 0.10 it is the partition's incarnation,
// which changes exactly when the partition is re-created.
func (h *history) incarnation(ctx context.Context) error {
	cur, st := identity(h.p.info), h.l.st
	switch {
	case cur == 0:
		return nil
	case st.Incarnation == 0 && st.Generation == 0 && !st.HasWritten && st.Intent == nil:
		// A fresh item: S3 may hold generations from before it (issue
		// 21, item 2).
		return h.startGeneration(ctx, cur)
	case cur == st.Incarnation:
		return h.markGeneration(ctx)
	}
	recreated, err := h.isRecreated(ctx, cur)
	if err != nil {
		return err
	}
	if recreated {
		return h.reset(ctx, cur)
	}
	if err := h.l.write(ctx, "", func(ctx context.Context, st state.State) (state.State, error) {
		return h.p.r.State.Adopt(ctx, st, cur, h.p.r.Options.Lease)
	}); err != nil {
		return err
	}
	return h.markGeneration(ctx)
}

// isRecreated tells whether the partition, whose identity cur is not the
// one the state recorded, was re-created since.
func (h *history) isRecreated(ctx context.Context, cur uint64) (bool, error) {
	if exactIdentity(cur) && exactIdentity(h.l.st.Incarnation) {
		return true, nil
	}
	// A state that recorded no identity (a row from before identities
	// were kept, an old backup) is checked too: what it archived may be an
	// earlier incarnation's (issue 21, item 7).
	recreated, err := h.recreated(ctx)
	if err != nil || recreated || h.l.st.HasWritten || h.l.st.Intent != nil {
		return recreated, err
	}
	return h.markerDisowns(ctx, cur)
}

// reset starts the next generation for the re-created partition cur,
// ending the old incarnation's unfinished object first.
func (h *history) reset(ctx context.Context, cur uint64) error {
	if h.l.st.Generation == ^uint32(0) {
		return fmt.Errorf("partition re-created: generation limit %d reached", h.l.st.Generation)
	}
	// A state restored from an old backup may be behind S3's generations.
	gen, err := h.liveGeneration(ctx, cur, h.l.st.Generation+1)
	if err != nil {
		return err
	}
	h.p.log.Warn("partition was deleted and re-created in Iggy: archiving the new one from offset 0 as a new generation",
		"recorded_incarnation", describeIdentity(h.l.st.Incarnation), "incarnation", describeIdentity(cur), "generation", gen)
	if in := h.l.st.Intent; in != nil {
		if err := h.retire(ctx, *in); err != nil {
			return err
		}
	}
	if err := h.l.write(ctx, "", func(ctx context.Context, st state.State) (state.State, error) {
		return h.p.r.State.Reset(ctx, st, cur, gen, h.p.r.Options.Lease)
	}); err != nil {
		return err
	}
	h.ps.Recreated, h.ps.Generation = true, h.l.st.Generation
	h.group.forgetStale() // else an offset of the old incarnation
	return h.markGeneration(ctx)
}

// recreated looks for the message the state last recorded (the unfinished
// object's first, else the last one written): a partition that no longer
// reaches that offset, or holds another message there, was re-created. When
// that message is gone (retention) the group tells: a re-created topic
// comes with a new group, which has stored nothing in range yet.
func (h *history) recreated(ctx context.Context) (bool, error) {
	off, ts := h.l.st.LastWritten, h.l.st.LastTimestamp
	if in := h.l.st.Intent; in != nil {
		off, ts = in.First, in.FirstTimestamp
	} else if !h.l.st.HasWritten {
		return false, nil // nothing archived yet: nothing to tell apart
	}
	m, err := h.p.messageAt(ctx, off, "its incarnation could be checked")
	switch {
	case err != nil:
		return false, err
	case m == nil:
		return true, nil // the partition ends before it
	}
	if same, known := recordedMessage(m, off, ts); known {
		return !same, nil
	}
	// The state's record cannot tell (no server time recorded, as after
	// adopted objects or a skip marker; or retention took its message):
	// the generation marker's message may.
	live, known, err := h.markerTells(ctx)
	if err != nil || known {
		return !live, err
	}
	return !h.group.inRange(), nil
}

// recordedMessage tells from m, the first message at or after off, whether
// the partition is the incarnation a record of (off, ts) was made in: ts
// is the server time of message off, or, for a gap marker ending at off,
// of the first message after it. The same time at or after off proves it
// (messages of one send batch share a time; a re-created partition's are
// later); another message at off disproves it. Otherwise (retention took
// the recorded message, or ts is 0) known is false.
func recordedMessage(m *batch.Message, off, ts uint64) (same, known bool) {
	switch {
	case ts == 0 || m.Offset < off:
		return false, false
	case m.Timestamp == ts:
		return true, true
	case m.Offset == off:
		return false, true
	}
	return false, false
}

// retire ends the old incarnation's unfinished object before a reset: if
// it never reached S3, its key is fenced and its range reported as a gap of
// the old generation (its messages went with the partition). An unfinished
// gap marker is written again under its own key instead, as recover does:
// it is a pure function of its range, so whichever write lands first is the
// marker, and no second one reports the same offsets. The reset then drops
// the intent in the same write that moves the incarnation on, so a run
// that dies in between repeats all of this.
func (h *history) retire(ctx context.Context, in state.Intent) error {
	if isGapKey(in.ObjectKey) {
		_, err := h.writer.upload(ctx, &sealed{first: in.First, last: in.Last, gap: true, done: func() {}})
		return err
	}
	h.marks.abortUploads(ctx, in.ObjectKey)
	_, exists, err := h.marks.void(ctx, in)
	if err != nil || exists {
		return err
	}
	_, err = h.marks.putGapMarker(ctx, h.l.names.Gap(in.First, in.Last, 0), in.First, in.Last, CauseRecreated)
	return err
}

// startGeneration records cur as the incarnation of a fresh state item, at
// the generation S3 says it has.
func (h *history) startGeneration(ctx context.Context, cur uint64) error {
	carried, floor, err := h.renames.carryOver(ctx, cur)
	if err != nil {
		return err
	}
	if carried {
		return h.incarnation(ctx) // the carried state's, checked as any other
	}
	gen, err := h.liveGeneration(ctx, cur, floor)
	if err != nil {
		return err
	}
	if err := h.l.write(ctx, "", func(ctx context.Context, st state.State) (state.State, error) {
		if gen == 0 {
			return h.p.r.State.Adopt(ctx, st, cur, h.p.r.Options.Lease)
		}
		return h.p.r.State.Reset(ctx, st, cur, gen, h.p.r.Options.Lease)
	}); err != nil {
		return err
	}
	h.ps.Generation = h.l.st.Generation
	return h.markGeneration(ctx)
}

// markGeneration writes the marker of the state's generation, create-only,
// if this process has not seen it yet. The first marker of a generation
// stays: a later one could only name another message of the same
// incarnation.
func (h *history) markGeneration(ctx context.Context) error {
	key := h.l.names.GenerationMarker()
	if h.p.r.Marked.has(key) {
		return nil
	}
	st := h.l.st
	off, ts := st.LastWritten, st.LastTimestamp
	if in := st.Intent; in != nil && in.FirstTimestamp != 0 {
		off, ts = in.First, in.FirstTimestamp
	} else if !st.HasWritten || ts == 0 {
		if h.p.info.MessagesCount == 0 {
			return nil // nothing to tell this incarnation by yet
		}
		// Not a bare poll: one answered from a stale assignment is empty,
		// and the generation's objects would go without their marker.
		m, err := h.p.messageAt(ctx, 0, "a message for the generation marker could be read")
		if err != nil {
			return fmt.Errorf("read a message for the generation marker: %w", err)
		}
		if m == nil {
			return nil // nothing to tell this incarnation by yet
		}
		off, ts = m.Offset, m.Timestamp
	}
	return h.marks.putOnce(ctx, key, "generation marker", generationMarker{
		Stream: h.p.bp.Stream, Topic: h.p.bp.Topic, Partition: h.p.bp.ID, Generation: st.Generation,
		Identity: st.Incarnation, Incarnation: describeIdentity(st.Incarnation), Offset: off, Timestamp: ts,
	})
}

// liveGeneration is the generation the live incarnation (identity cur) has
// in S3, for a state that is about to start one: a fresh state item
// (floor 0) or a re-created partition (floor the state's generation + 1).
// The newest generation marker decides: its incarnation, if live, keeps its
// generation (its objects are adopted); else the next one is new. Without a
// marker at or above floor, floor.
func (h *history) liveGeneration(ctx context.Context, cur uint64, floor uint32) (uint32, error) {
	newest, size, found, err := h.newestMarker(ctx)
	if err != nil {
		return 0, err
	}
	if !found || newest < floor {
		return floor, nil
	}
	m, err := h.readMarker(ctx, newest, size)
	if err != nil {
		return 0, err
	}
	live, err := h.isLive(ctx, m, cur)
	if err != nil {
		return 0, err
	}
	if live {
		h.p.log.Info("S3 holds a generation of the live incarnation: going on with it", "generation", newest)
		return newest, nil
	}
	if newest == ^uint32(0) {
		return 0, fmt.Errorf("partition %s/%s/%d: generation limit reached", h.p.bp.Stream, h.p.bp.Topic, h.p.bp.ID)
	}
	return newest + 1, nil
}

// newestMarker lists the partition's generation markers for the newest
// one's generation and size; found is false when S3 has none.
func (h *history) newestMarker(ctx context.Context) (gen uint32, size int64, found bool, err error) {
	names := h.l.names
	prefix := names.GenerationsPrefix()
	err = h.l.await(ctx, func(ctx context.Context) error {
		return h.p.r.Objects.List(ctx, prefix, func(key string, sz int64) error {
			if g, ok := names.ParseGenerationMarker(key); ok && (!found || g > gen) {
				gen, found, size = g, true, sz
			}
			return nil
		})
	})
	if err != nil {
		return 0, 0, false, fmt.Errorf("list the generation markers under %q: %w", prefix, err)
	}
	return gen, size, found, nil
}

// readMarker reads the generation marker of generation gen, size bytes.
func (h *history) readMarker(ctx context.Context, gen uint32, size int64) (generationMarker, error) {
	var m generationMarker
	key := h.l.names.Generation(gen).GenerationMarker()
	if size > maxMarkerSize {
		return m, fmt.Errorf("generation marker %s is %d bytes, not one the sink wrote: remove it, or move it aside, to go on", key, size)
	}
	var body []byte
	err := h.l.await(ctx, func(ctx context.Context) (err error) {
		body, err = h.p.r.Objects.Get(ctx, key)
		return err
	})
	if err != nil {
		return m, fmt.Errorf("read the generation marker %s: %w", key, err)
	}
	bp := h.p.bp
	if err := json.Unmarshal(body, &m); err != nil || m.Generation != gen || m.Stream != bp.Stream || m.Topic != bp.Topic || m.Partition != bp.ID {
		return m, fmt.Errorf("generation marker %s does not describe generation %d of %s/%s/%d: remove it, or move it aside, to go on", key, gen, bp.Stream, bp.Topic, bp.ID)
	}
	return m, nil
}

// markerDisowns reports whether the marker of the state's generation ties
// it to another incarnation than cur: a state that archived nothing yet
// cannot tell a re-creation by its own record, but S3 may hold the
// generation's earlier objects (a state item leased before any run drained
// its partition, then the partition re-created).
func (h *history) markerDisowns(ctx context.Context, cur uint64) (bool, error) {
	m, found, err := h.stateMarker(ctx)
	if err != nil || !found {
		return false, err
	}
	live, err := h.isLive(ctx, m, cur)
	return !live, err
}

// stateMarker reads the marker of the state's generation; false when S3
// has none.
func (h *history) stateMarker(ctx context.Context) (generationMarker, bool, error) {
	key := h.l.names.GenerationMarker()
	var size int64
	var found bool
	err := h.l.await(ctx, func(ctx context.Context) (err error) {
		size, found, err = h.p.r.Objects.Head(ctx, key)
		return err
	})
	if err != nil || !found {
		return generationMarker{}, false, err
	}
	m, err := h.readMarker(ctx, h.l.st.Generation, size)
	return m, err == nil, err
}

// markerTells reports whether the marker of the state's generation ties it
// to the live incarnation by its message (known false when there is no
// marker, or when retention took its message: creation times are no
// evidence where a restart re-stamps them).
func (h *history) markerTells(ctx context.Context) (live, known bool, err error) {
	m, found, err := h.stateMarker(ctx)
	if err != nil || !found {
		return false, false, err
	}
	at, err := h.p.messageAt(ctx, m.Offset, "its generation could be told")
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
func (h *history) isLive(ctx context.Context, m generationMarker, cur uint64) (bool, error) {
	if exactIdentity(cur) && exactIdentity(m.Identity) {
		return cur == m.Identity, nil
	}
	at, err := h.p.messageAt(ctx, m.Offset, "its generation could be told")
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
	return m.Identity == cur || h.group.inRange(), nil
}
