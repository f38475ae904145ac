package iggytest

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

var fuzzClient = vsr.U128From(0x1667)

func vsrRequest(d vsr.Dialect, code uint32, session, request uint64, inc uint64, body []byte) []byte {
	op, ok := vsr.OperationOf(code)
	if !ok {
		op = vsr.OpNonReplicated
	}
	h := vsr.RequestHeader{Size: uint32(vsr.HeaderSize + len(body)), Client: fuzzClient, Operation: op, Session: session, Request: request,
		Code: code, PartitionIncarnation: inc}
	return append(vsr.AppendRequestHeader(nil, d, &h), body...)
}

func vsrLoginFrame(d vsr.Dialect) []byte {
	body := vsr.AppendLogin(nil, d, &vsr.Login{Version: d.Version(), SDKName: "fuzz", SDKVersion: "1", Username: "iggy", Password: "iggy"})
	return vsrRequest(d, vsr.CodeLogin, 0, 0, 0, body)
}

// vsrSeeds are requests of a logged-in session 1 against fuzzBroker's state
// (stream "s", topic "t" with 2 partitions of incarnations 1 and 2, group "g").
func vsrSeeds(d vsr.Dialect) [][]byte {
	s, t, g := vsr.NamedID("s"), vsr.NamedID("t"), vsr.NamedID("g")
	group := vsr.Consumer{Kind: vsr.ConsumerGroup, ID: g}
	batch := vsr.SealBatch(vsr.AppendFrame(vsr.BeginBatch(nil, vsr.BatchHeader{OriginTimestamp: 5}), vsr.U128From(9), 0, 0, []byte("hi"),
		vsr.AppendHeader(nil, vsr.HeaderString, []byte("k"), vsr.HeaderString, []byte("v"))))
	ref := vsr.AppendGroupRef(nil, vsr.GroupRef{Stream: s, Topic: t, Group: g})
	return [][]byte{
		vsrRequest(d, vsr.CodePing, 1, 1, 0, nil),
		vsrRequest(d, vsr.CodeGetStream, 1, 1, 0, vsr.AppendIdentifier(nil, s)),
		vsrRequest(d, vsr.CodeGetTopic, 1, 1, 0, vsr.AppendTopicRef(nil, s, t)),
		vsrRequest(d, vsr.CodeCreateTopic, 1, 1, 0, vsr.AppendCreateTopic(nil, &vsr.CreateTopic{Stream: s, Partitions: 2, Name: "u",
			Options: []vsr.Option{{Key: "durability", Kind: vsr.HeaderString, Value: []byte("replicated")}}})),
		vsrRequest(d, vsr.CodeJoinGroup, 1, 2, 0, ref),
		vsrRequest(d, vsr.CodeSyncGroup, 1, 2, 0, ref),
		vsrRequest(d, vsr.CodeSend, 1, 3, 1, vsr.AppendSend(nil, &vsr.Send{Stream: s, Topic: t, Partitioning: vsr.PartitioningPartition,
			Key: vsr.ToPartition(0), Count: 1, Batch: batch})),
		vsrRequest(d, vsr.CodePoll, 1, 3, 1, vsr.AppendPoll(nil, &vsr.Poll{Consumer: group, Stream: s, Topic: t, Partition: vsr.PartitionID(0),
			Strategy: vsr.AtOffset(0), Count: 5, AutoCommit: true})),
		vsrRequest(d, vsr.CodeStoreOffset, 1, 4, 1, vsr.AppendOffset(nil, vsr.CodeStoreOffset, &vsr.Offset{Consumer: group, Stream: s, Topic: t,
			Partition: vsr.PartitionID(0), Offset: 1, Ack: 1})),
		vsrRequest(d, vsr.CodePartitionRoute, 1, 4, 0, vsr.AppendRouteRequest(nil, s, t, 1)),
		vsrRequest(d, vsr.CodeLeaveGroup, 1, 5, 0, ref),
		vsrRequest(d, vsr.CodeLogout, 1, 6, 0, nil),
	}
}

// FuzzVSRConnection feeds arbitrary bytes to a VSR connection after a valid
// login, in both dialects: the broker must not panic, must stop at the end of
// the input (or at a frame size it cannot skip), and every frame it sends must be
// a well-formed reply or eviction.
func FuzzVSRConnection(f *testing.F) {
	for _, d := range []vsr.Dialect{vsr.V011, vsr.V012} {
		var all []byte
		for _, s := range vsrSeeds(d) {
			f.Add(uint8(d), s)
			all = append(all, s...)
		}
		f.Add(uint8(d), all)
	}
	f.Add(uint8(1), []byte{4, 0, 0, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, dialect uint8, data []byte) {
		d := vsr.Dialect(dialect%2 + 1)
		b := fuzzBroker(t)
		var out bytes.Buffer
		c := newVSRConn(b, nil, 0, 0)
		c.w = &out
		err := c.serve(bytes.NewReader(append(vsrLoginFrame(d), data...)))
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, errFrameSize) {
			t.Fatalf("serve ended with %v", err)
		}
		frames := out.Bytes()
		for i := 0; len(frames) > 0; i++ {
			cmd, size, err := vsr.FrameKind(frames, vsr.MaxFrameSize)
			if err != nil || int(size) > len(frames) {
				t.Fatalf("frame %d: %v (size %d of %d bytes)", i, err, size, len(frames))
			}
			switch cmd {
			case vsr.CommandReply:
				h, err := vsr.DecodeReplyHeader(frames, d)
				if err != nil || (h.Status != 0 && size != vsr.HeaderSize) {
					t.Fatalf("reply %d: %+v, %v", i, h, err)
				}
				if i == 0 && h.Status != 0 {
					t.Fatalf("login refused: status %d", h.Status)
				}
			case vsr.CommandEviction:
				if _, err := vsr.DecodeEviction(frames); err != nil {
					t.Fatalf("eviction %d: %v", i, err)
				}
			default:
				t.Fatalf("frame %d: command %d", i, cmd)
			}
			frames = frames[size:]
		}
	})
}
