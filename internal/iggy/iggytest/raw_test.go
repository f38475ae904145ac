package iggytest_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/legacywire"
)

// rawConn speaks the framing by hand so tests control every byte.
type rawConn struct {
	t  *testing.T
	nc net.Conn
}

func (tg *target) raw(t *testing.T) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", tg.addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &rawConn{t: t, nc: nc}
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func frame(code uint32, payload []byte) []byte { return legacywire.AppendRequest(nil, code, payload) }

// roundTrip writes raw bytes and reads one reply; replies are never 1 byte long and
// errors never carry a body.
func (r *rawConn) roundTrip(wire []byte) (status uint32, payload []byte) {
	r.t.Helper()
	_ = r.nc.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.nc.Write(wire); err != nil {
		r.t.Fatalf("write: %v", err)
	}
	h, err := legacywire.ReadReplyHeader(r.nc)
	if err != nil {
		r.t.Fatalf("read reply header: %v", err)
	}
	if h.Length == 1 {
		r.t.Fatalf("reply with a 1-byte payload (status %d): the SDK would lose sync", h.Status)
	}
	if h.Status != 0 && h.Length != 0 {
		r.t.Fatalf("error %d carries a %d-byte body", h.Status, h.Length)
	}
	payload, err = legacywire.ReadPayload(r.nc, nil, int(h.Length))
	if err != nil {
		r.t.Fatalf("read reply payload: %v", err)
	}
	return h.Status, payload
}

func (r *rawConn) call(code uint32, payload []byte) (uint32, []byte) {
	r.t.Helper()
	return r.roundTrip(frame(code, payload))
}

func (r *rawConn) mustOK(what string, code uint32, payload []byte) []byte {
	r.t.Helper()
	st, p := r.call(code, payload)
	if st != 0 {
		r.t.Fatalf("%s: status %d", what, st)
	}
	return p
}

const loginHex = "0469676779 0469676779 05000000 302e382e30 00000000"

// TestGoldenRequestVectors replays the SDK-captured requests of the protocol
// reference §6 and checks the broker's byte layout of each answer.
func TestGoldenRequestVectors(t *testing.T) {
	tg := newTarget(t, iggytest.WithToken("tok"))
	tg.hooks(t) // fixed names "s"/"t"/"g" and id expectations need a fresh broker
	r := tg.raw(t)
	le32 := binary.LittleEndian.Uint32
	le64 := binary.LittleEndian.Uint64

	if p := r.mustOK("ping before login", 1, nil); len(p) != 0 {
		t.Fatalf("ping payload %x", p)
	}
	if p := r.mustOK("login", 38, unhex(t, loginHex)); !bytes.Equal(p, []byte{0, 0, 0, 0}) {
		t.Fatalf("login payload %x, want user id 0", p)
	}
	if p := r.mustOK("login with token", 44, unhex(t, "03746f6b")); !bytes.Equal(p, []byte{0, 0, 0, 0}) {
		t.Fatalf("token login payload %x", p)
	}
	md := r.mustOK("cluster metadata", 12, nil)
	if le32(md) != 11 || string(md[4:15]) != "single-node" || le32(md[15:]) != 1 {
		t.Fatalf("metadata %x", md)
	}
	if p := r.mustOK("get stream 7 (missing)", 200, unhex(t, "01 04 07000000")); len(p) != 0 {
		t.Fatalf("missing stream payload %x, want empty OK", p)
	}
	sh := r.mustOK("create stream s", 202, unhex(t, "01 73"))
	if len(sh) != 34 || le32(sh) != 0 || le32(sh[12:]) != 0 || sh[32] != 1 || sh[33] != 's' {
		t.Fatalf("stream header %x", sh)
	}
	if st, _ := r.call(202, unhex(t, "01 73")); st != iggytest.StatusStreamNameExists {
		t.Fatalf("duplicate stream status %d", st)
	}
	if p := r.mustOK("get stream s", 200, unhex(t, "02 01 73")); !bytes.Equal(p, sh) {
		t.Fatalf("get stream %x, want %x", p, sh)
	}
	th := r.mustOK("create topic", 302, unhex(t, "020173 02000000 01 ffffffffffffffff 0000000000000000 00 0174"))
	if len(th) != 52+2*40 || le32(th) != 0 || le32(th[12:]) != 2 || le64(th[16:]) != ^uint64(0) || th[24] != 1 || th[50] != 1 || th[51] != 't' {
		t.Fatalf("topic reply %x", th)
	}
	for i := range 2 {
		part := th[52+40*i:]
		if le32(part) != uint32(i) || le64(part[16:]) != 0 || le64(part[32:]) != 0 {
			t.Fatalf("partition record %d: %x", i, part[:40])
		}
	}
	if p := r.mustOK("get topic", 300, unhex(t, "020173 020174")); !bytes.Equal(p, th) {
		t.Fatalf("get topic %x, want %x", p, th)
	}
	cg := r.mustOK("create group", 602, unhex(t, "020173 020174 0167"))
	if !bytes.Equal(cg, unhex(t, "00000000 02000000 00000000 0167")) {
		t.Fatalf("group header %x", cg)
	}
	r.mustOK("join", 604, unhex(t, "020173 020174 020167"))
	if p := r.mustOK("get group", 600, unhex(t, "020173 020174 020167")); !bytes.Equal(p, unhex(t, "00000000 02000000 01000000 0167 00000000 02000000 00000000 01000000")) {
		t.Fatalf("group with member %x", p)
	}
	send := unhex(t, `10000000 020173 020174 020401000000 01000000 00000000 51000000 0000000000000000
		0000000000000000 00000000000000000000000000000000 0000000000000000 0000000000000000 00401e18240a0600
		0c000000 05000000 0000000000000000 68656c6c6f 02 01000000 6b 02 01000000 76`)
	if len(send)+4 != 121 {
		t.Fatalf("send vector is %d bytes, want len field 121", len(send)+4)
	}
	r.mustOK("send", 101, send)

	if p := r.mustOK("poll offset 5 partition 1", 100, unhex(t, "02 020167 | 020173 | 020174 | 01 01000000 | 01 0500000000000000 | 0a000000 | 01")); !bytes.Equal(p, unhex(t, "01000000 0000000000000000 00000000")) {
		t.Fatalf("poll beyond end %x, want header for partition 1 only", p)
	}
	next := unhex(t, "02 020167 | 020173 | 020174 | 00 00000000 | 05 0000000000000000 | 0a000000 | 00")
	if p := r.mustOK("poll next (partition 0 slot)", 100, next); !bytes.Equal(p, make([]byte, 16)) {
		t.Fatalf("poll of empty partition 0 %x", p)
	}
	p := r.mustOK("poll next (partition 1 slot)", 100, next)
	if len(p) != 16+81 || le32(p) != 1 || le64(p[4:]) != 0 || le32(p[12:]) != 1 {
		t.Fatalf("poll reply %x", p)
	}
	m := p[16:]
	if le64(m) != xxh3.Hash(m[8:]) {
		t.Fatalf("checksum %x, want XXH3-64 of the frame after it", le64(m))
	}
	if bytes.Equal(m[8:24], make([]byte, 16)) || le64(m[24:]) != 0 || le64(m[32:]) == 0 {
		t.Fatalf("id/offset/timestamp not set by the server: %x", m[:64])
	}
	if !bytes.Equal(m[40:], send[len(send)-(81-40):]) {
		t.Fatalf("origin timestamp, lengths, payload and headers changed:\n got %x\nwant %x", m[40:], send[len(send)-41:])
	}
	getOff := unhex(t, "02 020167 020173 020174 01 01000000")
	if p := r.mustOK("get offset before store", 120, getOff); len(p) != 0 {
		t.Fatalf("offset before store %x, want empty OK", p)
	}
	if st, _ := r.call(121, unhex(t, "02 020167 020173 020174 01 01000000 0400000000000000")); st != iggytest.StatusInvalidOffset {
		t.Fatalf("store offset 4 > current 0: status %d, want 4100", st)
	}
	r.mustOK("store offset 0", 121, unhex(t, "02 020167 020173 020174 01 01000000 0000000000000000"))
	if p := r.mustOK("get offset", 120, getOff); !bytes.Equal(p, unhex(t, "01000000 0000000000000000 0000000000000000")) {
		t.Fatalf("offset reply %x", p)
	}
	r.mustOK("leave", 605, unhex(t, "020173 020174 020167"))
	if st, _ := r.call(605, unhex(t, "020173 020174 020167")); st != iggytest.StatusGroupMemberNotFound {
		t.Fatalf("second leave status %d, want 5006", st)
	}
	if st, _ := r.call(203, unhex(t, "01 04 07000000")); st != iggytest.StatusStreamNotFound {
		t.Fatalf("delete stream 7 status %d, want 1009", st)
	}
}

// TestMalformedFrames sends broken requests; each must get an error status with no
// body and leave the connection usable for the next request.
func TestMalformedFrames(t *testing.T) {
	tg := newTarget(t)
	r := tg.raw(t)
	if st, _ := r.call(200, unhex(t, "0201 73")); st != iggytest.StatusUnauthenticated {
		t.Fatalf("get stream before login: status %d, want 40", st)
	}
	r.mustOK("login", 38, loginPayload(tg.user, tg.pass))
	sname := unique("m")
	r.mustOK("create stream", 202, append([]byte{byte(len(sname))}, sname...))
	sid := append([]byte{2, byte(len(sname))}, sname...)
	r.mustOK("create topic", 302, cat(sid, unhex(t, "01000000 01 ffffffffffffffff 0000000000000000 00 0174")))
	tid := unhex(t, "020174")
	msgFrame := func(uhl, pl uint32, body int) []byte {
		f := make([]byte, 64)
		binary.LittleEndian.PutUint32(f[48:], uhl)
		binary.LittleEndian.PutUint32(f[52:], pl)
		return append(f, make([]byte, body)...)
	}
	sendPayload := func(metaLen uint32, count uint32, end uint32, msgs []byte) []byte {
		p := binary.LittleEndian.AppendUint32(nil, metaLen)
		p = cat(p, sid, tid, unhex(t, "020400000000"))
		p = binary.LittleEndian.AppendUint32(p, count)
		for range count {
			p = cat(p, make([]byte, 4), binary.LittleEndian.AppendUint32(nil, end), make([]byte, 8))
		}
		return cat(p, msgs)
	}
	meta := uint32(len(sid) + len(tid) + 6 + 4)
	r.mustOK("create group", 602, cat(sid, tid, unhex(t, "0167")))
	tests := []struct {
		name string
		wire []byte
		want uint32
	}{
		// A real 0.8.0 server reads the 4-byte code whatever the length says.
		{"length below 4", unhex(t, "00000000 01000000"), iggytest.StatusInvalidCommand},
		{"length 2", unhex(t, "02000000 abcdef01"), iggytest.StatusInvalidCommand},
		{"unknown code", frame(9999, nil), iggytest.StatusInvalidCommand},
		{"ping with trailing byte", frame(1, []byte{1}), iggytest.StatusOK},
		{"truncated identifier", frame(200, unhex(t, "0104 0700")), iggytest.StatusInvalidCommand},
		{"identifier kind 3", frame(200, unhex(t, "0301 73")), iggytest.StatusInvalidCommand},
		{"numeric identifier of 3 bytes", frame(200, unhex(t, "0103 010203")), iggytest.StatusInvalidFormat},
		{"empty string identifier", frame(200, unhex(t, "0200")), iggytest.StatusInvalidFormat},
		{"stream name longer than frame", frame(202, unhex(t, "05 6162")), iggytest.StatusInvalidCommand},
		{"empty stream name", frame(202, unhex(t, "00")), iggytest.StatusInvalidFormat},
		{"create topic compression 0", frame(302, cat(sid, unhex(t, "01000000 00 ffffffffffffffff 0000000000000000 00 0178"))), iggytest.StatusInvalidCommand},
		{"create topic compression 3", frame(302, cat(sid, unhex(t, "01000000 03 ffffffffffffffff 0000000000000000 00 0178"))), iggytest.StatusInvalidCommand},
		{"create topic 1001 partitions", frame(302, cat(sid, unhex(t, "e9030000 01 ffffffffffffffff 0000000000000000 00 0178"))), iggytest.StatusTooManyPartitions},
		{"create topic in missing stream", frame(302, unhex(t, "0104 ffffff00 01000000 01 ffffffffffffffff 0000000000000000 00 0178")), iggytest.StatusStreamNotFound},
		{"duplicate topic", frame(302, cat(sid, unhex(t, "01000000 01 ffffffffffffffff 0000000000000000 00 0174"))), iggytest.StatusTopicNameExists},
		{"poll strategy 9", frame(100, cat(unhex(t, "01 01040100 0000"), sid, tid, unhex(t, "01 00000000 09 0000000000000000 01000000 00"))), iggytest.StatusInvalidCommand},
		{"poll consumer kind 7", frame(100, cat(unhex(t, "07 0104 01000000"), sid, tid, unhex(t, "01 00000000 01 0000000000000000 01000000 00"))), iggytest.StatusInvalidCommand},
		{"poll truncated", frame(100, cat(unhex(t, "01 0104 01000000"), sid, tid, unhex(t, "01 00000000 01 00000000"))), iggytest.StatusInvalidCommand},
		{"poll missing topic", frame(100, cat(unhex(t, "01 0104 01000000"), sid, unhex(t, "020178"), unhex(t, "01 00000000 01 0000000000000000 01000000 00"))), iggytest.StatusTopicNotFound},
		{"store offset missing group", frame(121, cat(unhex(t, "02 020178"), sid, tid, unhex(t, "01 00000000 0000000000000000"))), iggytest.StatusGroupNotFound},
		{"create group duplicate name", frame(602, cat(sid, tid, unhex(t, "0167"))), iggytest.StatusGroupNameExists},
		{"login without version fields", frame(38, unhex(t, "0469676779 0469676779")), iggytest.StatusInvalidCommand},
		{"login wrong password", frame(38, loginPayload(tg.user, tg.pass+"!")), iggytest.StatusInvalidCredentials},
		{"send metadata length wrong", frame(101, sendPayload(meta+1, 1, 65, msgFrame(0, 1, 1))), iggytest.StatusNonZeroOffset},
		{"send zero messages", frame(101, sendPayload(meta, 0, 0, nil)), iggytest.StatusInvalidMessagesCount},
		{"send index end mismatch is not checked", frame(101, sendPayload(meta, 1, 66, msgFrame(0, 1, 1))), iggytest.StatusOK},
		{"send empty payload is accepted", frame(101, sendPayload(meta, 1, 64, msgFrame(0, 0, 0))), iggytest.StatusOK},
		{"send truncated message", frame(101, sendPayload(meta, 1, 70, msgFrame(0, 6, 2))), iggytest.StatusMissingIndex},
		{"send trailing bytes", frame(101, sendPayload(meta, 1, 65, msgFrame(0, 1, 2))), iggytest.StatusInvalidMessagesSize},
		{"send huge header lengths", frame(101, sendPayload(meta, 1, 65, msgFrame(0xffffffff, 0xffffffff, 1))), iggytest.StatusMissingIndex},
		{"send partitioning kind 9", frame(101, cat(binary.LittleEndian.AppendUint32(nil, meta), sid, tid, unhex(t, "090400000000 01000000"))), iggytest.StatusInvalidCommand},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A fresh connection per case, so that one frame the server
			// reads differently cannot garble the cases after it.
			r := tg.raw(t)
			r.mustOK("login", 38, loginPayload(tg.user, tg.pass))
			if st, _ := r.roundTrip(tc.wire); st != tc.want {
				t.Errorf("status %d, want %d", st, tc.want)
			}
			if st, _ := r.call(1, nil); st != 0 {
				t.Fatalf("ping after the bad frame: status %d", st)
			}
		})
	}
	t.Run("control payload over 10 MiB", func(t *testing.T) {
		tg.hooks(t)
		r.t = t
		if st, _ := r.call(200, make([]byte, 10<<20+1)); st != iggytest.StatusInvalidCommand {
			t.Fatalf("status %d, want 3", st)
		}
		if st, _ := r.call(1, nil); st != 0 {
			t.Fatalf("ping after the oversized frame: status %d", st)
		}
	})
}

func loginPayload(user, pass string) []byte {
	p := append([]byte{byte(len(user))}, user...)
	p = append(p, byte(len(pass)))
	p = append(p, pass...)
	p = binary.LittleEndian.AppendUint32(p, 5)
	p = append(p, "0.8.0"...)
	return binary.LittleEndian.AppendUint32(p, 0)
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
