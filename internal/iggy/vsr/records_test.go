package vsr

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// The 0.12 partition record of the development crate's own test (shared
// there with the SDK decoder tests).
func TestGoldenPartition012(t *testing.T) {
	rec := unhex(t, "01000000 004cf1238e010000 02000000 6300000000000000 0004000000000000 6400000000000000 1700000000000000 0000000000000000 6500000000000000 03 010304 02 0104")
	topic := AppendTopicHeader(nil, V012, &Topic{ID: 4, PartitionsCount: 1, Name: "t"})
	tp, ok, err := DecodeTopic(append(topic, rec...), V012)
	if err != nil || !ok {
		t.Fatalf("decode: ok=%v err=%v", ok, err)
	}
	want := Partition{ID: 1, CreatedAt: 1_710_000_000_000, Segments: 2, CurrentOffset: 99, Size: 1024, MessagesCount: 100,
		Context: PartitionContext{Incarnation: 23, MetadataOp: 101}, Members: []uint8{1, 3, 4}, InSync: []uint8{1, 4}}
	got := tp.Partitions[0]
	if got.ID != want.ID || got.CreatedAt != want.CreatedAt || got.CurrentOffset != want.CurrentOffset || got.Context != want.Context ||
		!bytes.Equal(got.Members, want.Members) || !bytes.Equal(got.InSync, want.InSync) || got.Size != want.Size || got.MessagesCount != want.MessagesCount {
		t.Fatalf("partition %+v, want %+v", got, want)
	}
	if again := AppendPartition(nil, V012, &got); !bytes.Equal(again, rec) {
		t.Fatalf("encode\n got %x\nwant %x", again, rec)
	}
}

func TestPollMessages(t *testing.T) {
	for _, d := range []Dialect{V011, V012} {
		b := pollReply(d, 3, []uint64{4, 5, 6, 9, 10})
		p, err := DecodePollReply(b, d)
		if err != nil {
			t.Fatal(err)
		}
		var offs []uint64
		var stamps []uint64
		err = p.Messages(true, func(m *Message) error {
			offs = append(offs, m.Offset)
			stamps = append(stamps, m.Timestamp)
			if len(m.Payload) != 1 || len(m.Headers) == 0 {
				t.Fatalf("message %d: payload %q headers %x", m.Offset, m.Payload, m.Headers)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if !slices.Equal(offs, []uint64{4, 5, 6, 9, 10}) || !slices.Equal(stamps, []uint64{1004, 1004, 1004, 1009, 1009}) {
			t.Fatalf("%s: offsets %v, server times %v", d, offs, stamps)
		}
	}
}

func TestPollMessagesRefuses(t *testing.T) {
	good := pollReply(V011, 1, []uint64{0, 1, 2})
	corrupt := func(f func(b []byte)) []byte {
		b := slices.Clone(good)
		f(b)
		return b
	}
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"payload byte flipped", corrupt(func(b []byte) { b[16+256+48] ^= 1 }), &ChecksumError{}},
		{"count above the records", corrupt(func(b []byte) { le.PutUint32(b[12:], 4) }), ErrMalformed},
		{"count below the records", corrupt(func(b []byte) { le.PutUint32(b[12:], 2) }), ErrMalformed},
		{"batch length beyond the reply", corrupt(func(b []byte) { le.PutUint64(b[16+32:], 1<<40) }), ErrMalformed},
		{"frame payload length beyond its batch", corrupt(func(b []byte) { le.PutUint32(b[16+256+36:], 1<<31) }), ErrMalformed},
		{"truncated", good[:len(good)-1], ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := DecodePollReply(tc.b, V011)
			if err == nil {
				err = p.Messages(true, func(*Message) error { return nil })
			}
			var ce *ChecksumError
			if _, wantSum := tc.want.(*ChecksumError); wantSum {
				if !errors.As(err, &ce) {
					t.Fatalf("error %v, want a checksum error", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

func TestCheckBatchProducer012(t *testing.T) {
	b := BeginBatch(nil, BatchHeader{})
	b = AppendFrame(b, U128From(1), 0, 0, []byte("x"), nil)
	b[52] = 1                // producer present
	le.PutUint64(b[56:], 77) // producer id
	le.PutUint16(b[64:], 3)  // epoch
	le.PutUint32(b[68:], 5)  // base sequence
	SealBatch(b)
	if _, err := CheckBatch(b, V012); err != nil {
		t.Fatalf("0.12 batch with a producer: %v", err)
	}
	if _, err := CheckBatch(b, V011); !errors.Is(err, ErrMalformed) {
		t.Fatalf("0.11 accepts a producer section: %v", err)
	}
	b[56]++ // the producer is covered by the checksum
	if _, err := CheckBatch(b, V012); !errors.Is(err, ErrMalformed) {
		t.Fatalf("changed producer id passes the checksum: %v", err)
	}
}

func TestSplitResult(t *testing.T) {
	if p, err := SplitResult(AppendResultOK([]byte{})); err != nil || len(p) != 0 {
		t.Fatalf("ok: %x %v", p, err)
	}
	_, err := SplitResult(AppendResultError(nil, StatusGroupNameExists))
	if !IsStatus(err, StatusGroupNameExists) {
		t.Fatalf("rejection: %v", err)
	}
	if _, err := SplitResult([]byte{2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a count beyond the body reads as %v", err)
	}
}

func TestBatchFrames(t *testing.T) {
	b := BeginBatch(nil, BatchHeader{OriginTimestamp: 100})
	b = AppendFrame(b, U128From(7), 0, 0, []byte("a"), nil)
	b = AppendFrame(b, U128From(8), 1, 5, []byte("bc"), AppendHeader(nil, HeaderString, []byte("k"), HeaderString, []byte("v")))
	b = SealBatch(b)
	if _, err := CheckBatch(b, V011); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := BatchFrames(b, func(f *Frame) error {
		got = append(got, fmt.Sprintf("%s/%d/%d/%s/%d", f.ID, f.OffsetDelta, f.TimestampDelta, f.Payload, len(f.Headers)))
		return nil
	})
	want := []string{U128From(7).String() + "/0/0/a/0", U128From(8).String() + "/1/5/bc/12"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("frames %v, %v; want %v", got, err, want)
	}
	for _, bad := range [][]byte{b[:100], b[:len(b)-1], append(slices.Clone(b), 0)} {
		if err := BatchFrames(bad, func(*Frame) error { return nil }); !errors.Is(err, ErrMalformed) {
			t.Fatalf("BatchFrames of %d bytes = %v, want malformed", len(bad), err)
		}
	}
}

// A reply too large to keep is read past; its first bytes still say which
// message it starts with and how large that one is, so a sink can report
// the message by its offset.
func TestPeekPollReply(t *testing.T) {
	for _, d := range []Dialect{V011, V012} {
		b := pollReply(d, 3, []uint64{9, 10})
		pk, err := PeekPollReply(b[:min(len(b), PollPeekSize)], d)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		p, _ := DecodePollReply(b, d)
		var first *Message
		_ = p.Messages(true, func(m *Message) error {
			if first == nil {
				c := *m
				first = &c
			}
			return nil
		})
		if pk.Count != 2 || pk.Offset != first.Offset || pk.Timestamp != first.Timestamp || pk.Size != uint64(len(first.Payload)+len(first.Headers)) {
			t.Fatalf("%s: peek %+v, first message %d at %d with %d bytes", d, pk, first.Offset, first.Timestamp, len(first.Payload)+len(first.Headers))
		}
		if _, err := PeekPollReply(b[:20], d); err == nil {
			t.Fatalf("%s: a 20-byte prefix peeked", d)
		}
		empty := AppendPollPrefix(nil, d, &PollReply{PartitionID: 3})
		if _, err := PeekPollReply(empty, d); err == nil {
			t.Fatalf("%s: a reply of no messages peeked", d)
		}
	}
}
