package iggytest

import (
	"fmt"
	"slices"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

// OffsetStore is one attempt to store (or delete) a consumer offset, by any
// protocol, accepted or not.
type OffsetStore struct {
	// Stream and Topic are the names, or the identifiers as sent when they
	// name nothing; Group is the group's (empty for a single consumer, whose
	// identifier is Consumer).
	Stream, Topic, Group, Consumer string
	Partition                      uint32
	Offset                         uint64
	// Delete marks a DeleteConsumerOffset, AutoCommit a poll's auto-commit.
	Delete, AutoCommit bool
	// Protocol is "0.8", "0.9" or "0.10".
	Protocol string
	// Client is the VSR client id (zero on 0.8); Session the broker's
	// session id (0.8: one per connection).
	Client  vsr.U128
	Session uint32
	// Status is 0 when the store was accepted, else the refusing status.
	Status uint32
}

// maxOffsetStores bounds the record (the oldest attempts are dropped).
const maxOffsetStores = 100_000

// OffsetStores returns every offset store attempt so far (the last 100,000), oldest first.
func (b *Broker) OffsetStores() []OffsetStore {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.stores)
}

// OnOffsetStore calls fn with every later offset store attempt, synchronously and
// with the broker's state locked: fn must not call the Broker. nil removes it.
func (b *Broker) OnOffsetStore(fn func(OffsetStore)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.onStore = fn
}

func (b *Broker) recordStoreLocked(r OffsetStore) {
	if len(b.stores) >= maxOffsetStores {
		b.stores = append(b.stores[:0], b.stores[len(b.stores)-maxOffsetStores/2:]...)
	}
	b.stores = append(b.stores, r)
	if b.onStore != nil {
		b.onStore(r)
	}
}

// offsetRecord starts the record of a store attempt with the names it resolves to.
func (b *Broker) offsetRecord(protocol string, s *session, sid, tid vsr.Identifier, isGroup bool, cid vsr.Identifier, partition uint32) OffsetStore {
	r := OffsetStore{Stream: identText(sid), Topic: identText(tid), Partition: partition, Protocol: protocol}
	if s != nil {
		r.Client, r.Session = s.client, s.id
	}
	st := b.lookupStream(toIdent(sid))
	var t *topic
	if st != nil {
		r.Stream = st.name
		if t = st.lookupTopic(toIdent(tid)); t != nil {
			r.Topic = t.name
		}
	}
	if !isGroup {
		r.Consumer = identText(cid)
		return r
	}
	r.Group = identText(cid)
	if t != nil {
		if g := t.lookupGroup(toIdent(cid)); g != nil {
			r.Group = g.name
		}
	}
	return r
}

func identText(id vsr.Identifier) string {
	if id.Numeric {
		return fmt.Sprintf("#%d", id.ID)
	}
	return id.Name
}

func fromIdent(i ident) vsr.Identifier {
	return vsr.Identifier{Numeric: i.numeric, ID: i.id, Name: i.name}
}

// groupOf must be called with b.mu held.
func (b *Broker) groupOf(streamName, topicName, groupName string) (*topic, *group, error) {
	_, t, serr := b.resolveTopic(ident{name: streamName}, ident{name: topicName})
	if serr != nil {
		return nil, nil, fmt.Errorf("iggytest: %w: %s/%s: %w", ErrNotFound, streamName, topicName, serr)
	}
	g := t.lookupGroup(ident{name: groupName})
	if g == nil {
		return t, nil, fmt.Errorf("iggytest: %w: group %q of %s/%s", ErrNotFound, groupName, streamName, topicName)
	}
	return t, g, nil
}

// GroupGeneration is a group's generation, which every membership or assignment
// change bumps (what 0.9's Sync reports); ok=false when the group does not exist.
func (b *Broker) GroupGeneration(streamName, topicName, groupName string) (uint64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, g, err := b.groupOf(streamName, topicName, groupName)
	if err != nil {
		return 0, false
	}
	return g.generation, true
}

// GroupMember is one member of a consumer group as the broker sees it.
type GroupMember struct {
	// ID is the member id GetConsumerGroup reports.
	ID uint32
	// Client is the member's VSR client id (zero for a 0.8 member), Session
	// the broker's session id.
	Client  vsr.U128
	Session uint32
	// Partitions are the member's own, pending revocations included;
	// Revoking those pending revocation from it (still its own, not
	// pollable on 0.9); Awaiting those pending revocation to it.
	Partitions, Revoking, Awaiting []uint32
}

// GroupMembers lists a group's members and their assignment, by member id.
func (b *Broker) GroupMembers(streamName, topicName, groupName string) ([]GroupMember, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, g, err := b.groupOf(streamName, topicName, groupName)
	if err != nil {
		return nil, err
	}
	out := make([]GroupMember, 0, len(g.members))
	for _, m := range g.members {
		gm := GroupMember{ID: m.id, Client: m.sess.client, Session: m.sess.id, Partitions: slices.Sorted(slices.Values(m.partitions))}
		for p, r := range g.pending {
			if r.from == m {
				gm.Revoking = append(gm.Revoking, p)
			}
			if r.to == m {
				gm.Awaiting = append(gm.Awaiting, p)
			}
		}
		slices.Sort(gm.Revoking)
		slices.Sort(gm.Awaiting)
		out = append(out, gm)
	}
	return out, nil
}

// SetCluster replaces what GetClusterMetadata reports (default: one node, this
// broker, with its replica id; nil restores it).
func (b *Broker) SetCluster(nodes []vsr.Node) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cluster = slices.Clone(nodes)
}

// SetPrimary names the replica that is a partition's primary (0.10 routes). When
// it is not this broker's replica id (WithReplicaID), this broker answers the
// partition's polls, sends and offset commands (100, 101, 120, 121, 122) on 0.10
// with status 89 NotPrimary, and GetPartitionRoute (105) names replica.
func (b *Broker) SetPrimary(streamName, topicName string, partition uint32, replica uint8) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, p, err := b.partitionOf(streamName, topicName, partition)
	if err != nil {
		return fmt.Errorf("iggytest: set primary: %w", err)
	}
	p.primary = int(replica)
	return nil
}

// SkipOffsets makes the next message appended to a partition get an offset n
// higher than it would (a hole, as 0.10 may leave after a recovery), for every
// protocol.
func (b *Broker) SkipOffsets(streamName, topicName string, partition uint32, n uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, p, err := b.partitionOf(streamName, topicName, partition)
	if err != nil {
		return fmt.Errorf("iggytest: skip offsets: %w", err)
	}
	p.next += n
	return nil
}

// Incarnation is a partition's incarnation (0.10 partition context): a
// broker-wide counter, so a re-created partition has a new one.
func (b *Broker) Incarnation(streamName, topicName string, partition uint32) (uint64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, p, err := b.partitionOf(streamName, topicName, partition)
	if err != nil {
		return 0, false
	}
	return p.incarnation, true
}
