package vsr

import (
	"bytes"
	"errors"
	"testing"
)

// Each fuzz target feeds arbitrary bytes to decoders: they must return an
// error wrapping ErrMalformed or a value, never panic; what decodes must
// encode back to the same bytes.

func FuzzFrameHeader(f *testing.F) {
	f.Add(AppendRequestHeader(nil, V011, &RequestHeader{Size: 259, Client: U128{1}, Request: 1, Operation: OpNonReplicated, Session: 1, Code: CodeGetStream}))
	f.Add(AppendReplyHeader(nil, V012, &ReplyHeader{Size: 300, Client: U128{1}, Request: 3, Status: 5009, Committed: true, PartitionIncarnation: 7}))
	f.Add(AppendEviction(nil, &Eviction{Client: U128{2}, ServerMax: Pack(0, 12, 0), ServerMin: Pack(0, 12, 0), Reason: EvictIncompatibleProtocol}))
	f.Fuzz(func(t *testing.T, b []byte) {
		cmd, size, err := FrameKind(b, MaxFrameSize)
		if err != nil {
			mustMalformed(t, err)
			return
		}
		switch cmd {
		case CommandEviction:
			e, err := DecodeEviction(b)
			if err != nil {
				mustMalformed(t, err)
				return
			}
			if size != HeaderSize || e.Reason == 0 {
				t.Fatalf("eviction of size %d reason %d accepted", size, e.Reason)
			}
		case CommandReply:
			for _, d := range []Dialect{V011, V012} {
				h, err := DecodeReplyHeader(b, d)
				if err != nil {
					t.Fatalf("FrameKind accepted a reply DecodeReplyHeader refuses: %v", err)
				}
				if h.Size != size {
					t.Fatalf("size %d vs %d", h.Size, size)
				}
			}
		case CommandRequest:
			for _, d := range []Dialect{V011, V012} {
				h, err := DecodeRequestHeader(b, d)
				if err != nil {
					mustMalformed(t, err)
					continue
				}
				_ = ValidateRequest(&h)
				again := AppendRequestHeader(nil, d, &h)
				back, err := DecodeRequestHeader(again, d)
				if err != nil || back.Size != h.Size || back.Client != h.Client || back.Operation != h.Operation {
					t.Fatalf("round trip: %+v -> %+v (%v)", h, back, err)
				}
			}
		}
	})
}

func FuzzReplyBodies(f *testing.F) {
	f.Add(byte(0), AppendStream(nil, V011, &Stream{ID: 1, Name: "s"}))
	f.Add(byte(1), AppendPartition(AppendTopicHeader(nil, V011, &Topic{ID: 2, PartitionsCount: 1, Name: "t"}), V011, &Partition{ID: 0, CurrentOffset: 9}))
	f.Add(byte(1), AppendPartition(AppendTopicHeader(nil, V012, &Topic{ID: 2, PartitionsCount: 1, Name: "t"}), V012, &Partition{Context: PartitionContext{Incarnation: 3}, Members: []uint8{1, 2}, InSync: []uint8{1}}))
	f.Add(byte(2), AppendGroup(nil, &Group{ID: 1, MembersCount: 1, Name: "g", Members: []Member{{ID: 0, Partitions: []uint32{0, 1}}}}, true))
	f.Add(byte(3), AppendAssignment(nil, &Assignment{Generation: 4, Partitions: []uint32{2}}))
	f.Add(byte(4), AppendStoredOffset(nil, &StoredOffset{Partition: 1, CurrentOffset: 9, Stored: 3}))
	f.Add(byte(5), AppendCluster(nil, V011, &Cluster{Name: "c", Nodes: []Node{{Name: "n", IP: "127.0.0.1", TCP: 8090}}}))
	f.Add(byte(6), AppendConfirmations(nil, []Confirmation{{PartitionID: 1, BaseOffset: 5}}))
	f.Add(byte(7), AppendRoute(nil, &Route{Incarnation: 2, PrimaryReplica: 1}))
	f.Add(byte(8), AppendLoginReply(AppendResultOK(nil), &LoginReply{Session: 1, ServerVersion: Pack(0, 11, 0), ServerName: "0.9.0"}))
	f.Add(byte(9), AppendResultError(nil, 5009))
	f.Fuzz(func(t *testing.T, which byte, b []byte) {
		for _, d := range []Dialect{V011, V012} {
			var again []byte
			var err error
			switch which % 10 {
			case 0:
				var s Stream
				var ok bool
				if s, ok, err = DecodeStream(b, d); err == nil && ok {
					again = AppendStream(nil, d, &s)
					for i := range s.Topics {
						again = AppendTopicHeader(again, d, &s.Topics[i])
					}
				}
			case 1:
				var tp Topic
				var ok bool
				if tp, ok, err = DecodeTopic(b, d); err == nil && ok {
					again = AppendTopicHeader(nil, d, &tp)
					for i := range tp.Partitions {
						again = AppendPartition(again, d, &tp.Partitions[i])
					}
				}
			case 2:
				var g Group
				var ok bool
				if g, ok, err = DecodeGroup(b); err == nil && ok {
					again = AppendGroup(nil, &g, true)
				}
				if gs, gerr := DecodeGroups(b); gerr == nil {
					var all []byte
					for i := range gs {
						all = AppendGroup(all, &gs[i], false)
					}
					if !bytes.Equal(all, b) {
						t.Fatalf("groups round trip differs")
					}
				} else {
					mustMalformed(t, gerr)
				}
			case 3:
				var a Assignment
				var ok bool
				if a, ok, err = DecodeAssignment(b); err == nil && ok {
					again = AppendAssignment(nil, &a)
				}
			case 4:
				var o StoredOffset
				var ok bool
				if o, ok, err = DecodeStoredOffset(b); err == nil && ok {
					again = AppendStoredOffset(nil, &o)
				}
			case 5:
				var c Cluster
				if c, err = DecodeCluster(b, d); err == nil {
					again = AppendCluster(nil, d, &c)
				}
			case 6:
				var cs []Confirmation
				if cs, err = DecodeConfirmations(b); err == nil && len(b) > 0 {
					again = AppendConfirmations(nil, cs)
				}
			case 7:
				var r Route
				if r, err = DecodeRoute(b); err == nil {
					again = AppendRoute(nil, &r)
				}
			case 8:
				var p []byte
				var se *ServerError
				if p, err = SplitResult(b); errors.As(err, &se) {
					err = nil
				} else if err == nil {
					var lr LoginReply
					if lr, err = DecodeLoginReply(p); err == nil && lr.ServerName != "" {
						again = AppendLoginReply(AppendResultOK(nil), &lr)
					}
				}
			case 9:
				_, err = SplitResult(b)
				var se *ServerError
				if errors.As(err, &se) {
					err = nil
				}
			}
			if err != nil {
				mustMalformed(t, err)
				continue
			}
			if again != nil && !bytes.Equal(again, b) {
				t.Fatalf("kind %d dialect %d: round trip\n got %x\nwant %x", which%10, d, again, b)
			}
		}
	})
}

func FuzzPollReply(f *testing.F) {
	f.Add(pollReply(V011, 7, []uint64{0, 1, 2}), true)
	f.Add(pollReply(V012, 7, []uint64{5, 9}), false)
	f.Add(AppendPollPrefix(nil, V011, &PollReply{PartitionID: ResyncPartition}), true)
	f.Fuzz(func(t *testing.T, b []byte, verify bool) {
		for _, d := range []Dialect{V011, V012} {
			if _, err := PeekPollReply(b, d); err != nil {
				mustMalformed(t, err)
			}
			p, err := DecodePollReply(b, d)
			if err != nil {
				mustMalformed(t, err)
				continue
			}
			var n uint32
			var total int
			err = p.Messages(verify, func(m *Message) error {
				n++
				total += len(m.Payload) + len(m.Headers)
				return nil
			})
			if err != nil {
				mustMalformed(t, err)
				continue
			}
			if n != p.Count || total > len(b) {
				t.Fatalf("walked %d of %d messages, %d payload bytes in %d", n, p.Count, total, len(b))
			}
		}
	})
}

func FuzzRequestBodies(f *testing.F) {
	g := Consumer{Kind: ConsumerGroup, ID: NamedID("g")}
	f.Add(byte(0), AppendPoll(nil, &Poll{Consumer: g, Stream: NumericID(1), Topic: NamedID("t"), Partition: PartitionID(2), Strategy: AtOffset(5), Count: 10}))
	f.Add(byte(1), AppendOffset(nil, CodeStoreOffset, &Offset{Consumer: g, Stream: NumericID(1), Topic: NumericID(2), Partition: PartitionID(0), Offset: 9, Ack: AckQuorum}))
	f.Add(byte(2), AppendGroupRef(nil, GroupRef{NumericID(0), NamedID("t"), NamedID("g")}))
	f.Add(byte(3), AppendLogin(nil, V011, &Login{Version: Pack(0, 11, 0), SDKName: "x", SDKVersion: "1", Username: "iggy", Password: "iggy"}))
	f.Add(byte(3), AppendLogin(nil, V012, &Login{Version: Pack(0, 12, 0), SDKName: "x", SDKVersion: "1", PAT: true, Token: "tok", Context: []byte("c")}))
	f.Add(byte(4), AppendCreateTopic(nil, &CreateTopic{Stream: NamedID("s"), Partitions: 3, Name: "t", Options: []Option{{Key: "k", Kind: HeaderString, Value: []byte("v")}}}))
	batch := SealBatch(AppendFrame(BeginBatch(nil, BatchHeader{}), U128From(1), 0, 0, []byte("x"), nil))
	f.Add(byte(5), AppendSend(nil, &Send{Stream: NamedID("s"), Topic: NamedID("t"), Partitioning: PartitioningBalanced, Count: 1, Batch: batch}))
	f.Fuzz(func(t *testing.T, which byte, b []byte) {
		var again []byte
		var err error
		switch which % 6 {
		case 0:
			var p Poll
			if p, err = DecodePoll(b); err == nil {
				again = AppendPoll(nil, &p)
			}
		case 1:
			for _, code := range []uint32{CodeGetOffset, CodeStoreOffset, CodeDeleteOffset} {
				o, err := DecodeOffset(b, code)
				if err != nil {
					mustMalformed(t, err)
					continue
				}
				if again := AppendOffset(nil, code, &o); !bytes.Equal(again, b) {
					t.Fatalf("offset %d round trip %x vs %x", code, again, b)
				}
			}
			return
		case 2:
			var g GroupRef
			if g, err = DecodeGroupRef(b); err == nil {
				again = AppendGroupRef(nil, g)
			}
		case 3:
			for _, d := range []Dialect{V011, V012} {
				l, err := DecodeLogin(b, d)
				if err != nil {
					mustMalformed(t, err)
					continue
				}
				if again := AppendLogin(nil, d, &l); !bytes.Equal(again, b) {
					t.Fatalf("login round trip %x vs %x", again, b)
				}
			}
			return
		case 4:
			var ct CreateTopic
			if ct, err = DecodeCreateTopic(b); err == nil {
				again = AppendCreateTopic(nil, &ct)
			}
		case 5:
			for _, d := range []Dialect{V011, V012} {
				s, err := DecodeSend(b, d)
				if err != nil {
					mustMalformed(t, err)
					continue
				}
				if again := AppendSend(nil, &s); !bytes.Equal(again, b) {
					t.Fatalf("send round trip %x vs %x", again, b)
				}
			}
			return
		}
		if err != nil {
			mustMalformed(t, err)
			return
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("kind %d round trip\n got %x\nwant %x", which%6, again, b)
		}
	})
}

func mustMalformed(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("error %v does not wrap ErrMalformed", err)
	}
}

// pollReply builds a reply with one batch per offset run.
func pollReply(d Dialect, partition uint32, offsets []uint64) []byte {
	out := AppendPollPrefix(nil, d, &PollReply{PartitionID: partition, CurrentOffset: offsets[len(offsets)-1], Count: uint32(len(offsets))})
	for i := 0; i < len(offsets); {
		j := i + 1
		for j < len(offsets) && offsets[j] == offsets[j-1]+1 {
			j++
		}
		start := len(out)
		out = BeginBatch(out, BatchHeader{PartitionID: uint64(partition), BaseOffset: offsets[i], BaseTimestamp: 1000 + offsets[i], OriginTimestamp: 500})
		for k := i; k < j; k++ {
			out = AppendFrame(out, U128From(offsets[k]+1), uint32(offsets[k]-offsets[i]), uint32(k), []byte{byte('a' + k)}, AppendHeader(nil, HeaderString, []byte("k"), HeaderString, []byte("v")))
		}
		SealBatch(out[start:])
		i = j
	}
	return out
}
