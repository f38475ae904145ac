package iggytest

import (
	"bytes"
	"encoding/hex"
	"io"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/legacywire"
)

// goldenFrames are the SDK-captured requests of the protocol reference §6.
var goldenFrames = []struct {
	code uint32
	hex  string
}{
	{CodeLoginUser, "0469676779 0469676779 05000000 302e382e30 00000000"},
	{CodeGetClusterMetadata, ""},
	{CodeLoginWithToken, "03746f6b"},
	{CodePing, ""},
	{CodeGetStream, "01 04 07000000"},
	{CodeGetStream, "02 01 73"},
	{CodeCreateStream, "01 73"},
	{CodeCreateTopic, "020173 02000000 01 ffffffffffffffff 0000000000000000 00 0174"},
	{CodeGetTopic, "020173 020174"},
	{CodeCreateConsumerGroup, "020173 020174 0167"},
	{CodeJoinConsumerGroup, "020173 020174 020167"},
	{CodeGetConsumerGroup, "020173 020174 020167"},
	{CodeSendMessages, "10000000 020173 020174 020401000000 01000000 00000000 51000000 0000000000000000 0000000000000000 00000000000000000000000000000000 0000000000000000 0000000000000000 00401e18240a0600 0c000000 05000000 0000000000000000 68656c6c6f 02 01000000 6b 02 01000000 76"},
	{CodePollMessages, "02 020167 020173 020174 00 00000000 05 0000000000000000 0a000000 00"},
	{CodePollMessages, "02 020167 020173 020174 01 01000000 01 0500000000000000 0a000000 01"},
	{CodeGetConsumerOffset, "02 020167 020173 020174 01 01000000"},
	{CodeStoreConsumerOffset, "02 020167 020173 020174 01 01000000 0400000000000000"},
	{CodeLeaveConsumerGroup, "020173 020174 020167"},
	{CodeDeleteStream, "01 04 07000000"},
}

func goldenPayload(tb testing.TB, h string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(h, " ", ""))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func encodeFrame(code uint32, payload []byte) []byte {
	return legacywire.AppendRequest(nil, code, payload)
}

// fuzzBroker is an unlistened broker holding stream "s", topic "t" (2 partitions)
// with messages and group "g", so decoded requests reach deep into exec.
func fuzzBroker(tb testing.TB) *Broker {
	tb.Helper()
	b := newBroker(defaultConfig())
	if err := b.Seed("s", "t", 2, 10); err != nil {
		tb.Fatal(err)
	}
	b.mu.Lock()
	_, t, _ := b.resolveTopic(ident{name: "s"}, ident{name: "t"})
	t.groups = append(t.groups, newGroup(0, "g"))
	b.mu.Unlock()
	return b
}

// FuzzDecodeRequest: any code and payload decode without panicking, and whatever
// decodes executes without panicking on an authenticated session.
func FuzzDecodeRequest(f *testing.F) {
	for _, g := range goldenFrames {
		f.Add(g.code, goldenPayload(f, g.hex))
	}
	f.Fuzz(func(t *testing.T, code uint32, payload []byte) {
		b := fuzzBroker(t) // fresh per input so every finding reproduces alone
		s := &session{id: 1, authed: true}
		req, err := decodeRequest(code, payload)
		if (req == nil) == (err == nil) {
			t.Fatalf("decode returned request %v and error %v", req, err)
		}
		if err != nil {
			if err.Status == StatusOK {
				t.Fatalf("decode error with status 0: %v", err)
			}
			return
		}
		out, serr := req.exec(b, s, make([]byte, legacywire.HeaderSize))
		if serr == nil && len(out)-legacywire.HeaderSize == 1 {
			t.Fatalf("code %d produced a 1-byte payload", code)
		}
		if serr != nil && serr.Status == StatusOK {
			t.Fatalf("exec error with status 0: %v", serr)
		}
	})
}

// FuzzFrames feeds arbitrary bytes to the per-connection frame handler: it must not
// panic, must stop at end of input, and every reply must be well formed.
func FuzzFrames(f *testing.F) {
	var all []byte
	for _, g := range goldenFrames {
		fr := encodeFrame(g.code, goldenPayload(f, g.hex))
		f.Add(fr)
		all = append(all, fr...)
	}
	f.Add(all)
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{2, 0, 0, 0, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		b := fuzzBroker(t) // fresh per input so every finding reproduces alone
		var out bytes.Buffer
		c := &conn{b: b, sess: &session{id: 2}}
		err := c.loop(bytes.NewReader(data), &out)
		if err != io.EOF && err != io.ErrUnexpectedEOF {
			t.Fatalf("loop ended with %v, want end of input", err)
		}
		for {
			h, err := legacywire.ReadReplyHeader(&out)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("truncated reply header: %v", err)
			}
			if h.Length == 1 || (h.Status != 0 && h.Length != 0) || out.Len() < int(h.Length) {
				t.Fatalf("bad reply: status %d length %d with %d bytes left", h.Status, h.Length, out.Len())
			}
			out.Next(int(h.Length))
		}
	})
}
