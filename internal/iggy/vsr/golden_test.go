package vsr

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/zeebo/xxh3"
)

// The vectors below were captured from the released apache-iggy 0.9.0
// client (Rust SDK 0.11.0) against a loopback recorder; see
// iggy-vsr-protocol.md §3.6.

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

var (
	idS = NamedID("s")
	idT = NamedID("t")
	idG = NamedID("g")
)

func TestGoldenRequestBodies(t *testing.T) {
	group := Consumer{Kind: ConsumerGroup, ID: idG}
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"login iggy/iggy", AppendLogin(nil, V011, &Login{Version: Pack(0, 11, 0), SDKName: "rust-sdk", SDKVersion: "0.11.0", Username: "iggy", Password: "iggy"}),
			"002c0000 08 727573742d73646b 06 302e31312e30 04 69676779 04 69676779 00000000"},
		{"get stream s", AppendIdentifier(nil, idS), "020173"},
		{"create stream s", AppendCreateStream(nil, "s", nil), "0173"},
		{"create topic s/t 2 partitions, options as the Python client sends them", AppendCreateTopic(nil, &CreateTopic{Stream: idS, Partitions: 2, Name: "t", Options: []Option{
			{Key: "consumer_offset_durability", Kind: HeaderString, Value: []byte("replicated")},
			{Key: "durability", Kind: HeaderString, Value: []byte("replicated")},
		}}), "020173 02000000 0174" +
			"02 1a000000" + hex.EncodeToString([]byte("consumer_offset_durability")) + "02 0a000000" + hex.EncodeToString([]byte("replicated")) +
			"02 0a000000" + hex.EncodeToString([]byte("durability")) + "02 0a000000" + hex.EncodeToString([]byte("replicated"))},
		{"create group s/t/g", AppendCreateGroup(nil, idS, idT, "g"), "020173 020174 0167"},
		{"join, leave, sync s/t/g", AppendGroupRef(nil, GroupRef{idS, idT, idG}), "020173 020174 020167"},
		{"poll group g p0 next 10", AppendPoll(nil, &Poll{Consumer: group, Stream: idS, Topic: idT, Partition: PartitionID(0), Strategy: Strategy{Kind: StrategyNext}, Count: 10}),
			"02 020167 020173 020174 01 00000000 05 0000000000000000 0a000000 00"},
		{"poll group g p1 offset 5 10 commit", AppendPoll(nil, &Poll{Consumer: group, Stream: idS, Topic: idT, Partition: PartitionID(1), Strategy: AtOffset(5), Count: 10, AutoCommit: true}),
			"02 020167 020173 020174 01 01000000 01 0500000000000000 0a000000 01"},
		{"store offset group g p1 4 quorum", AppendOffset(nil, CodeStoreOffset, &Offset{Consumer: group, Stream: idS, Topic: idT, Partition: PartitionID(1), Offset: 4, Ack: AckQuorum}),
			"02 020167 020173 020174 01 01000000 0400000000000000 01"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if want := unhex(t, tc.want); !bytes.Equal(tc.got, want) {
				t.Fatalf("body\n got %x\nwant %x", tc.got, want)
			}
		})
	}
}

func TestGoldenRequestChecksums(t *testing.T) {
	// The client stamps XXH3-64 of the body; the captured values.
	login := AppendLogin(nil, V011, &Login{Version: Pack(0, 11, 0), SDKName: "rust-sdk", SDKVersion: "0.11.0", Username: "iggy", Password: "iggy"})
	for _, tc := range []struct {
		name string
		body []byte
		want uint64
	}{
		{"register", login, 0x8fde203c2a3f8095},
		{"join", AppendGroupRef(nil, GroupRef{idS, idT, idG}), 0x26fb46cb5d60e843},
		{"logout (empty body)", nil, 0x2d06800538d394c2},
	} {
		if got := BodyChecksum(tc.body); got != U128From(tc.want) {
			t.Errorf("%s: checksum %s, want %#x", tc.name, got, tc.want)
		}
	}
}

func TestGoldenHeaders(t *testing.T) {
	client := U128{0xaa, 1, 2, 3}
	tests := []struct {
		name   string
		h      RequestHeader
		expect map[int]uint64 // offset -> little-endian value of the field (size by offset)
	}{
		{"ping before login", RequestHeader{Size: 256, Client: client, Request: 1, Operation: OpNonReplicated, Code: CodePing},
			map[int]uint64{48: 256, 60: 5, 168: 1, 176: 2, 184: 0, 196: 1}},
		{"login", RequestHeader{Size: 290, Client: client, Operation: OpRegister, RequestChecksum: U128From(0x8fde203c2a3f8095)},
			map[int]uint64{48: 290, 60: 5, 144: 0x8fde203c2a3f8095, 168: 0, 176: 1, 184: 0, 196: 0}},
		{"get stream", RequestHeader{Size: 259, Client: client, Request: 1, Operation: OpNonReplicated, Session: 1, Code: CodeGetStream},
			map[int]uint64{48: 259, 168: 1, 176: 2, 184: 1, 196: 200}},
		{"create stream", RequestHeader{Size: 258, Client: client, Request: 1, Operation: OpCreateStream, Session: 1, Code: CodeCreateStream},
			map[int]uint64{168: 1, 176: 128, 184: 1, 196: 0}},
		{"logout", RequestHeader{Size: 256, Client: client, Request: 7, Operation: OpLogout, Session: 1, RequestChecksum: U128From(0x2d06800538d394c2)},
			map[int]uint64{48: 256, 144: 0x2d06800538d394c2, 168: 7, 176: 3}},
	}
	width := map[int]int{48: 4, 60: 1, 144: 8, 168: 8, 176: 1, 184: 8, 196: 4}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendRequestHeader(nil, V011, &tc.h)
			if len(b) != HeaderSize {
				t.Fatalf("header is %d bytes", len(b))
			}
			for off, want := range tc.expect {
				var got uint64
				for i := width[off] - 1; i >= 0; i-- {
					got = got<<8 | uint64(b[off+i])
				}
				if got != want {
					t.Errorf("offset %d = %#x, want %#x", off, got, want)
				}
			}
			if !bytes.Equal(b[128:144], client[:]) {
				t.Errorf("client at 128 = %x", b[128:144])
			}
			// Everything not named is zero.
			named := map[int]bool{}
			for off := range width {
				for i := 0; i < width[off]; i++ {
					named[off+i] = true
				}
			}
			for i := 128; i < 160; i++ {
				named[i] = true
			}
			for i, c := range b {
				if !named[i] && c != 0 {
					t.Fatalf("byte %d = %#x, want 0", i, c)
				}
			}
			back, err := DecodeRequestHeader(b, V011)
			if err != nil {
				t.Fatal(err)
			}
			if back.Operation != OpNonReplicated {
				back.Code = tc.h.Code // not on the wire
			}
			if back != tc.h {
				t.Fatalf("decoded %+v, want %+v", back, tc.h)
			}
		})
	}
}

func TestGoldenSend(t *testing.T) {
	batch := BeginBatch(nil, BatchHeader{OriginTimestamp: 1_750_000_000_000_000})
	batch = AppendFrame(batch, U128From(1), 0, 0, []byte("hello"), nil)
	batch = SealBatch(batch)
	body := AppendSend(nil, &Send{Stream: idS, Topic: idT, Partitioning: PartitioningPartition, Key: ToPartition(1), Count: 1, Batch: batch})
	meta := unhex(t, "10000000 020173 020174 020401000000 01000000")
	if !bytes.Equal(body[:len(meta)], meta) {
		t.Fatalf("send metadata\n got %x\nwant %x", body[:len(meta)], meta)
	}
	rec := body[len(meta):]
	if len(rec) != 309 || le.Uint64(rec[32:]) != 309 || le.Uint32(rec[48:]) != 1 {
		t.Fatalf("batch: %d bytes, length field %d, count %d; want 309, 309, 1", len(rec), le.Uint64(rec[32:]), le.Uint32(rec[48:]))
	}
	frame := rec[256:]
	want := unhex(t, "8e5ca59edbbdbfb9 01000000000000000000000000000000 00000000 00000000 00000000 05000000 0000000000000000 68656c6c6f")
	if !bytes.Equal(frame, want) {
		t.Fatalf("frame\n got %x\nwant %x", frame, want)
	}
	// The batch checksum as the reference defines it, computed the long way.
	var h xxh3.Hasher
	for _, f := range [][]byte{rec[0:40], rec[48:52], frame[:8]} {
		h.Write(f)
	}
	if got := le.Uint64(rec[40:]); got != h.Sum64() {
		t.Fatalf("batch checksum %#x, want %#x", got, h.Sum64())
	}
	s, err := DecodeSend(body, V011)
	if err != nil {
		t.Fatalf("decode the send: %v", err)
	}
	if s.Count != 1 || s.Partitioning != PartitioningPartition || le.Uint32(s.Key) != 1 || s.Stream != idS || s.Topic != idT {
		t.Fatalf("decoded %+v", s)
	}
}

func TestGoldenReplies(t *testing.T) {
	t.Run("register", func(t *testing.T) {
		payload, err := SplitResult(unhex(t, "00000000 00000000 0100000000000000 002c0000 05 302e392e30"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := DecodeLoginReply(payload)
		if err != nil {
			t.Fatal(err)
		}
		if r != (LoginReply{UserID: 0, Session: 1, ServerVersion: Pack(0, 11, 0), ServerName: "0.9.0"}) {
			t.Fatalf("login reply %+v", r)
		}
		if got := AppendResultOK(nil); !bytes.Equal(AppendLoginReply(got, &r), unhex(t, "00000000 00000000 0100000000000000 002c0000 05 302e392e30")) {
			t.Fatal("encoding the login reply does not give the captured bytes")
		}
	})
	t.Run("empty poll", func(t *testing.T) {
		b := unhex(t, "00000000 0000000000000000 00000000")
		p, err := DecodePollReply(b, V011)
		if err != nil || p.Count != 0 || p.Resync() || len(p.Records) != 0 {
			t.Fatalf("%+v, %v", p, err)
		}
		if err := p.Messages(true, func(*Message) error { t.Fatal("a message in an empty poll"); return nil }); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("sync", func(t *testing.T) {
		a, member, err := DecodeAssignment(unhex(t, "0100000000000000 02000000 00000000 01000000"))
		if err != nil || !member || a.Generation != 1 || len(a.Partitions) != 2 || a.Partitions[0] != 0 || a.Partitions[1] != 1 {
			t.Fatalf("%+v member=%v err=%v", a, member, err)
		}
	})
}

func TestVersion(t *testing.T) {
	if v := Pack(0, 11, 0); v != 0x2c00 || v.String() != "0.11.0" {
		t.Fatalf("0.11.0 packs to %#x %q", uint32(v), v)
	}
	for _, tc := range []struct {
		server   Dialect
		min, max Version
		client   Version
		ok       bool
	}{
		{V011, Pack(0, 11, 0), Pack(0, 11, 0), Pack(0, 11, 0), true},
		{V011, Pack(0, 11, 0), Pack(0, 11, 3), Pack(0, 11, 1), true},
		{V011, Pack(0, 11, 0), Pack(0, 11, 0), Pack(0, 12, 0), false},
		{V011, Pack(0, 11, 0), Pack(0, 11, 0), Pack(0, 10, 9), false},
		{V012, Pack(0, 12, 0), Pack(0, 12, 0), Pack(0, 12, 0), true},
		{V012, Pack(0, 12, 0), Pack(0, 12, 0), Pack(0, 11, 0), false},
		{V012, Pack(0, 12, 0), Pack(0, 12, 0), Pack(0, 12, 1), false},
	} {
		if got := Compatible(tc.server, tc.min, tc.max, tc.client); got != tc.ok {
			t.Errorf("server %s [%s, %s], client %s: compatible = %v, want %v", tc.server, tc.min, tc.max, tc.client, got, tc.ok)
		}
	}
}
