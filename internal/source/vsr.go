package source

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggyref"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsrconn"
)

// vsrBackend is the Iggy 0.9/0.10 backend, our own client of their VSR
// protocol. Consumer groups work as 0.9 defines them: the server assigns
// partitions, Sync tells this member its own, and a poll of a partition it
// no longer owns answers the re-sync sentinel (or 5009).
type vsrBackend struct {
	c *vsrconn.Client

	syncMu   sync.Mutex // one Sync at a time (see owns)
	mu       sync.Mutex
	joined   map[groupKey]bool
	groups   map[groupKey]*assignment
	contexts map[partKey]vsr.PartitionContext // 0.10: per partition, the latest
}

type groupKey struct {
	stream, topic uint32
	group         string
}

type partKey struct{ stream, topic, partition uint32 }

// assignment is what Sync last said about this member's partitions; it is
// never changed once stored (a change stores a new one), so a reader may
// keep it after releasing the lock.
type assignment struct {
	partitions []uint32
	synced     time.Time
}

func openVSR(ctx context.Context, cfg Config, tlsCfg *tls.Config, d vsr.Dialect) (*Conn, error) {
	vc, err := vsrconn.Dial(ctx, vsrconn.Config{
		Address: cfg.Address, Username: cfg.Username, Password: cfg.Password, Token: cfg.Token,
		TLS: tlsCfg, TLSDomain: cfg.TLSDomain, Dialect: d,
		ConnectTimeout: cfg.ConnectTimeout, RequestTimeout: cfg.RequestTimeout, Keepalive: cfg.Keepalive,
		MaxReply: cfg.MaxPollReply,
	})
	if err != nil {
		var legacy *vsrconn.LegacyServerError
		var evicted *vsrconn.EvictedError
		switch {
		case errors.As(err, &legacy):
			return nil, err
		case errors.Is(err, ErrProtocolMismatch), errors.As(err, &evicted), !errors.Is(err, ErrConnectionLost):
			return nil, fmt.Errorf("iggy: login to %s as %s: %w", cfg.Address, who(cfg), err)
		}
		// Something accepted the TCP connection but did not speak Iggy
		// back: a proxy, a firewall, another service on that port.
		return nil, fmt.Errorf("iggy: login to %s as %s: %w; is %s the TCP address of an %s (default port 8090)?",
			cfg.Address, who(cfg), err, cfg.Address, serverKind(cfg.Protocol))
	}
	_, ver := vc.Server()
	b := &vsrBackend{c: vc, joined: map[groupKey]bool{}, groups: map[groupKey]*assignment{}, contexts: map[partKey]vsr.PartitionContext{}}
	return newConn(cfg, b, fmt.Sprintf("Iggy %s (protocol %s)", vc.Dialect().Server(), ver)), nil
}

func (b *vsrBackend) lost() bool { return b.c.Lost() }

func (b *vsrBackend) close() { _ = b.c.Close() }

func refID(r iggyref.Ref) vsr.Identifier {
	if r.ByID {
		return vsr.NumericID(r.ID)
	}
	return vsr.NamedID(r.Name)
}

func groupRef(t *Topic) vsr.GroupRef {
	return vsr.GroupRef{Stream: vsr.NumericID(t.StreamID), Topic: vsr.NumericID(t.TopicID), Group: vsr.NamedID(t.Group)}
}

func gkey(t *Topic) groupKey { return groupKey{t.StreamID, t.TopicID, t.Group} }

func (b *vsrBackend) stream(ctx context.Context, ref iggyref.Ref) (streamInfo, bool, error) {
	s, ok, err := b.c.GetStream(ctx, refID(ref))
	if err != nil || !ok {
		return streamInfo{}, false, err
	}
	return streamInfo{id: s.ID, name: s.Name}, true, nil
}

func (b *vsrBackend) topic(ctx context.Context, streamID uint32, ref iggyref.Ref) (topicInfo, bool, error) {
	tp, ok, err := b.c.GetTopic(ctx, vsr.NumericID(streamID), refID(ref))
	if vsr.IsStatus(err, vsr.StatusStreamNotFound) || vsr.IsStatus(err, vsr.StatusTopicNotFound) {
		return topicInfo{}, false, nil
	}
	if err != nil || !ok {
		return topicInfo{}, false, err
	}
	info := topicInfo{id: tp.ID, name: tp.Name, partitions: make([]PartitionInfo, 0, len(tp.Partitions))}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range tp.Partitions {
		info.partitions = append(info.partitions, PartitionInfo{ID: p.ID, MessagesCount: p.MessagesCount, CurrentOffset: p.CurrentOffset,
			CreatedAt: p.CreatedAt, Incarnation: p.Context.Incarnation})
		k := partKey{streamID, tp.ID, p.ID}
		if old, ok := b.contexts[k]; !ok || old.Incarnation != p.Context.Incarnation || old.MetadataOp < p.Context.MetadataOp {
			b.contexts[k] = p.Context
		}
	}
	return info, true, nil
}

// context is the partition context 0.10 requests carry (nil before 0.10).
func (b *vsrBackend) context(t *Topic, p uint32) *vsr.PartitionContext {
	if b.c.Dialect() < vsr.V012 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	pc := b.contexts[partKey{t.StreamID, t.TopicID, p}]
	return &pc
}

func (b *vsrBackend) join(ctx context.Context, t *Topic) error {
	g := groupRef(t)
	_, err := b.c.CreateGroup(ctx, g.Stream, g.Topic, t.Group)
	if err != nil && !vsr.IsStatus(err, vsr.StatusGroupNameExists) {
		return fmt.Errorf("create it: %w", err)
	}
	if err := b.c.JoinGroup(ctx, g); err != nil {
		return err
	}
	b.mu.Lock()
	b.joined[gkey(t)] = true
	b.mu.Unlock()
	_, err = b.sync(ctx, t)
	return err
}

// sync asks which partitions are this member's now. A member the server no
// longer counts (its membership expired, or it was evicted from the group)
// joins again once, since Join is idempotent, and asks again.
func (b *vsrBackend) sync(ctx context.Context, t *Topic) (*assignment, error) {
	a, member, err := b.c.SyncGroup(ctx, groupRef(t))
	if err == nil && !member && b.wasJoined(t) {
		if err = b.c.JoinGroup(ctx, groupRef(t)); err == nil {
			a, member, err = b.c.SyncGroup(ctx, groupRef(t))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sync consumer group: %w", err)
	}
	if !member {
		a = vsr.Assignment{}
	}
	as := &assignment{partitions: a.Partitions, synced: time.Now()}
	b.mu.Lock()
	b.groups[gkey(t)] = as
	b.mu.Unlock()
	return as, nil
}

// owns reports whether p is this member's partition now (newest is
// 0.8's): what a Sync received after this call began says. Concurrent
// calls share one Sync, so the probes of a run's start cost one.
func (b *vsrBackend) owns(ctx context.Context, t *Topic, p uint32, _ uint64) (bool, error) {
	return b.assigned(ctx, t, p, true)
}

// assigned reports whether the assignment lists p. With fresh unset an
// assignment that lists it will do, however old: a poll needs no more,
// since the server fences a poll of a partition that moved (the re-sync
// sentinel). A partition the assignment does not list is always asked
// about again, since a rebalance can hand it to this member at any time.
func (b *vsrBackend) assigned(ctx context.Context, t *Topic, p uint32, fresh bool) (bool, error) {
	began := time.Now()
	b.mu.Lock()
	a := b.groups[gkey(t)]
	b.mu.Unlock()
	if !fresh && a != nil && slices.Contains(a.partitions, p) {
		return true, nil
	}
	b.syncMu.Lock() // concurrent callers wait for one Sync and share it
	defer b.syncMu.Unlock()
	b.mu.Lock()
	a = b.groups[gkey(t)]
	b.mu.Unlock()
	if a == nil || !a.synced.After(began) {
		var err error
		if a, err = b.sync(ctx, t); err != nil {
			return false, err
		}
	}
	return slices.Contains(a.partitions, p), nil
}

func (b *vsrBackend) wasJoined(t *Topic) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.joined[gkey(t)]
}

// moved forgets p's ownership after the server said it moved, and the
// owner generation its polls were bound to.
func (b *vsrBackend) moved(t *Topic, p uint32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if a := b.groups[gkey(t)]; a != nil {
		b.groups[gkey(t)] = &assignment{partitions: slices.DeleteFunc(slices.Clone(a.partitions), func(x uint32) bool { return x == p })}
	}
	k := partKey{t.StreamID, t.TopicID, p}
	if pc, ok := b.contexts[k]; ok {
		pc.OwnerGeneration = 0
		b.contexts[k] = pc
	}
}

func (b *vsrBackend) leave(ctx context.Context, t *Topic) error {
	b.mu.Lock()
	delete(b.groups, gkey(t))
	delete(b.joined, gkey(t))
	b.mu.Unlock()
	err := b.c.LeaveGroup(ctx, groupRef(t))
	if vsr.IsStatus(err, vsr.StatusGroupMemberNotFound) {
		return nil
	}
	return err
}

func (b *vsrBackend) members(ctx context.Context, t *Topic) ([]Member, bool, error) {
	g, ok, err := b.c.GetGroup(ctx, groupRef(t))
	if err != nil || !ok {
		return nil, false, err
	}
	out := make([]Member, len(g.Members))
	for i, m := range g.Members {
		out[i] = Member{ID: m.ID, Partitions: m.Partitions}
	}
	return out, true, nil
}

// fenced turns the server's "not yours" and "re-created" refusals into
// the errors the drain acts on.
func (b *vsrBackend) fenced(t *Topic, p uint32, err error) error {
	switch {
	case vsr.IsStatus(err, vsr.StatusPartitionNotOwned), vsr.IsStatus(err, vsr.StatusGroupMemberNotFound):
		b.moved(t, p)
		return fmt.Errorf("%w: %w", ErrNotOwner, err)
	case vsr.IsStatus(err, vsr.StatusHistoryUnavailable):
		return fmt.Errorf("%w: %w", ErrHistoryChanged, err)
	}
	return err
}

// poll reads p from offset. The messages alias the reply's own buffer,
// one per poll, so nothing is copied per message.
func (b *vsrBackend) poll(ctx context.Context, t *Topic, p uint32, offset uint64, count uint32, dst []batch.Message, buf *[]byte) ([]batch.Message, bool, error) {
	owned, err := b.assigned(ctx, t, p, false)
	if err != nil || !owned {
		return dst, false, err
	}
	req := vsr.Poll{Consumer: vsr.Consumer{Kind: vsr.ConsumerGroup, ID: vsr.NamedID(t.Group)}, Stream: vsr.NumericID(t.StreamID), Topic: vsr.NumericID(t.TopicID),
		Partition: vsr.PartitionID(p), Strategy: vsr.AtOffset(offset), Count: count}
	var into []byte
	if buf != nil {
		into = *buf
	}
	rep, into, err := b.c.PollInto(ctx, &req, b.context(t, p), into)
	if buf != nil {
		*buf = into
	}
	var tooLarge *vsrconn.ReplyTooLargeError
	if errors.As(err, &tooLarge) {
		e := &PollTooLargeError{Size: tooLarge.Size, Limit: tooLarge.Limit}
		if pk, perr := vsr.PeekPollReply(tooLarge.Prefix, b.c.Dialect()); perr == nil {
			e.Peeked, e.Count, e.Offset, e.Timestamp, e.MessageSize = true, pk.Count, pk.Offset, pk.Timestamp, pk.Size
		}
		return dst, false, e
	}
	if err != nil {
		return dst, false, b.fenced(t, p, err)
	}
	if rep.Resync() {
		b.moved(t, p)
		return dst, false, fmt.Errorf("%w: the server answered with the re-sync sentinel (the partition moved to another member, or is being handed over)", ErrNotOwner)
	}
	if rep.PartitionID != p {
		return dst, false, fmt.Errorf("%w: a poll of partition %d answered for partition %d", ErrMalformedReply, p, rep.PartitionID)
	}
	if rep.Context.Incarnation != 0 {
		b.mu.Lock()
		b.contexts[partKey{t.StreamID, t.TopicID, p}] = rep.Context
		b.mu.Unlock()
	}
	if dst, err = appendMessages(dst, &rep); err != nil {
		return dst[:0], false, err
	}
	return dst, true, nil
}

// appendMessages appends a poll reply's messages to dst; their bytes
// alias the reply.
func appendMessages(dst []batch.Message, rep *vsr.PollReply) ([]batch.Message, error) {
	err := rep.Messages(true, func(m *vsr.Message) error {
		msg := batch.Message{Offset: m.Offset, Timestamp: m.Timestamp, Payload: m.Payload, ID: [16]byte(m.ID), OriginTimestamp: m.OriginTimestamp}
		if len(m.Headers) > 0 {
			msg.Headers = m.Headers
		}
		dst = append(dst, msg)
		return nil
	})
	if err != nil {
		return dst, fmt.Errorf("%w: %w", ErrMalformedReply, err)
	}
	return dst, nil
}

func offsetReq(t *Topic, p uint32) *vsr.Offset {
	return &vsr.Offset{Consumer: vsr.Consumer{Kind: vsr.ConsumerGroup, ID: vsr.NamedID(t.Group)}, Stream: vsr.NumericID(t.StreamID),
		Topic: vsr.NumericID(t.TopicID), Partition: vsr.PartitionID(p), Ack: vsr.AckQuorum}
}

func (b *vsrBackend) storedOffset(ctx context.Context, t *Topic, p uint32) (uint64, bool, error) {
	pc := b.context(t, p)
	if pc != nil {
		pc.OwnerGeneration = 0 // a read binds to no owner
	}
	so, ok, err := b.c.StoredOffset(ctx, offsetReq(t, p), pc)
	if err != nil {
		return 0, false, b.fenced(t, p, err)
	}
	return so.Stored, ok, nil
}

func (b *vsrBackend) storeOffset(ctx context.Context, t *Topic, p uint32, offset uint64) error {
	o := offsetReq(t, p)
	o.Offset = offset
	return b.fenced(t, p, b.c.StoreOffset(ctx, o, b.context(t, p)))
}
