package legacywire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadRequest(t *testing.T) {
	for _, tt := range []struct {
		name    string
		wire    string
		limit   int
		want    RequestHeader
		payload string
		err     error  // errors.Is
		rest    string // left unread in r
	}{
		{name: "ping", wire: "04000000 01000000", limit: 10, want: RequestHeader{4, 1}},
		// The SDK's GetStream of stream 7 (protocol reference §6).
		{name: "get stream", wire: "0a000000 c8000000 01 04 07000000", limit: 10, want: RequestHeader{10, 200}, payload: "01 04 07000000"},
		{name: "two frames", wire: "05000000 01000000 aa 04000000 01000000", limit: 10, want: RequestHeader{5, 1}, payload: "aa", rest: "04000000 01000000"},
		{name: "at the limit", wire: "06000000 02000000 aabb", limit: 2, want: RequestHeader{6, 2}, payload: "aabb"},
		{name: "over the limit", wire: "07000000 02000000 aabbcc", limit: 2, want: RequestHeader{7, 2}, err: ErrTooLarge, rest: "aabbcc"},
		{name: "length 0", wire: "00000000 09000000 ff", limit: 10, want: RequestHeader{0, 9}, err: ErrShortFrame, rest: "ff"},
		{name: "length 3", wire: "03000000 09000000", limit: 10, want: RequestHeader{3, 9}, err: ErrShortFrame},
		{name: "hostile length", wire: "ffffffff 01000000 aa", limit: 64 << 20, want: RequestHeader{math.MaxUint32, 1}, err: ErrTooLarge, rest: "aa"},
		{name: "hostile length, no limit", wire: "ffffffff 01000000 aabb", limit: math.MaxInt, want: RequestHeader{math.MaxUint32, 1}, payload: "aabb", err: io.ErrUnexpectedEOF},
		{name: "empty", wire: "", limit: 10, err: io.EOF},
		{name: "cut in the header", wire: "04000000 01", limit: 10, err: io.ErrUnexpectedEOF},
		{name: "cut before the payload", wire: "06000000 01000000", limit: 10, want: RequestHeader{6, 1}, err: io.ErrUnexpectedEOF},
		{name: "cut in the payload", wire: "06000000 01000000 aa", limit: 10, want: RequestHeader{6, 1}, payload: "aa", err: io.ErrUnexpectedEOF},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := bytes.NewReader(unhex(t, tt.wire))
			h, p, err := ReadRequest(r, nil, tt.limit)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if h != tt.want || !bytes.Equal(p, unhex(t, tt.payload)) {
				t.Fatalf("read %+v %x, want %+v %s", h, p, tt.want, tt.payload)
			}
			if rest, _ := io.ReadAll(r); !bytes.Equal(rest, unhex(t, tt.rest)) {
				t.Fatalf("left %x unread, want %s", rest, tt.rest)
			}
			var size *SizeError
			if errors.As(err, &size) && (size.Size != h.PayloadSize() || size.Limit != tt.limit) {
				t.Fatalf("size error %+v for %+v", size, h)
			}
		})
	}
}

func TestReadReply(t *testing.T) {
	for _, tt := range []struct {
		name    string
		wire    string
		limit   int
		want    ReplyHeader
		payload string
		err     error
		rest    string
	}{
		{name: "empty OK", wire: "00000000 00000000", limit: 10},
		{name: "login", wire: "00000000 04000000 01000000", limit: 10, want: ReplyHeader{0, 4}, payload: "01000000"},
		// As the SDK: a 1-byte payload and a body sent with an error stay unread.
		{name: "1-byte payload", wire: "00000000 01000000 aa", limit: 10, want: ReplyHeader{0, 1}, rest: "aa"},
		{name: "error", wire: "2a000000 00000000", limit: 10, want: ReplyHeader{42, 0}},
		{name: "error with a body", wire: "2a000000 02000000 aabb", limit: 10, want: ReplyHeader{42, 2}, rest: "aabb"},
		{name: "over the limit", wire: "00000000 03000000 aabbcc", limit: 2, want: ReplyHeader{0, 3}, err: ErrTooLarge, rest: "aabbcc"},
		{name: "hostile length", wire: "00000000 ffffffff aa", limit: 64 << 10, want: ReplyHeader{0, math.MaxUint32}, err: ErrTooLarge, rest: "aa"},
		{name: "empty", wire: "", limit: 10, err: io.EOF},
		{name: "cut in the header", wire: "000000", limit: 10, err: io.ErrUnexpectedEOF},
		{name: "cut before the payload", wire: "00000000 02000000", limit: 10, want: ReplyHeader{0, 2}, err: io.ErrUnexpectedEOF},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := bytes.NewReader(unhex(t, tt.wire))
			h, p, err := ReadReply(r, nil, tt.limit)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if h != tt.want || !bytes.Equal(p, unhex(t, tt.payload)) {
				t.Fatalf("read %+v %x, want %+v %s", h, p, tt.want, tt.payload)
			}
			if rest, _ := io.ReadAll(r); !bytes.Equal(rest, unhex(t, tt.rest)) {
				t.Fatalf("left %x unread, want %s", rest, tt.rest)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	for _, tt := range []struct {
		name  string
		write func(w io.Writer) error
		want  string
	}{
		{"request", func(w io.Writer) error { return WriteRequest(w, 200, unhex(t, "01 04 07000000")) }, "0a000000 c8000000 01 04 07000000"},
		{"empty request", func(w io.Writer) error { return WriteRequest(w, 1, nil) }, "04000000 01000000"},
		{"reply", func(w io.Writer) error { return WriteReply(w, 0, unhex(t, "01000000")) }, "00000000 04000000 01000000"},
		{"error reply", func(w io.Writer) error { return WriteReply(w, 40, nil) }, "28000000 00000000"},
		{"request header", func(w io.Writer) error {
			_, err := w.Write(RequestHeader{Length: 9, Code: 12}.Append([]byte{0xee}))
			return err
		}, "ee 09000000 0c000000"},
		{"reply header put", func(w io.Writer) error {
			b := []byte("xxxxxxxxpp")
			ReplyHeader{Status: 0, Length: 2}.Put(b)
			_, err := w.Write(b)
			return err
		}, "00000000 02000000 7070"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.write(&buf); err != nil {
				t.Fatal(err)
			}
			if want := unhex(t, tt.want); !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("wrote %x, want %x", buf.Bytes(), want)
			}
		})
	}
}

func TestReadPayloadReusesAndGrows(t *testing.T) {
	buf := make([]byte, 3, 100)
	p, err := ReadPayload(strings.NewReader("hello"), buf, 5)
	if err != nil || string(p) != "hello" || &p[0] != &buf[:1][0] {
		t.Fatalf("ReadPayload = %q, %v; want hello in the given buffer", p, err)
	}
	// A length of 1 GiB with 10 bytes sent allocates 64 KiB, not 1 GiB.
	p, err = ReadPayload(bytes.NewReader(make([]byte, 10)), nil, 1<<30)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(p) != 10 || cap(p) > 2*growStep {
		t.Fatalf("ReadPayload = %d bytes (cap %d), %v", len(p), cap(p), err)
	}
	big := bytes.Repeat([]byte{7}, 3*growStep+5)
	p, err = ReadPayload(bytes.NewReader(big), nil, len(big))
	if err != nil || !bytes.Equal(p, big) {
		t.Fatalf("ReadPayload of %d bytes: %d, %v", len(big), len(p), err)
	}
}

// readAll reads frames from data with read until it fails; it checks what
// every reader promises: no panic, a payload no longer than announced and
// allocated in step with the input, io.EOF only between frames.
func readAll(t *testing.T, data []byte, limit int, read func(r io.Reader, buf []byte) (announced int64, payload []byte, err error)) {
	r := bytes.NewReader(data)
	var buf []byte
	for frames := 0; ; frames++ {
		before := r.Len()
		announced, p, err := read(r, buf)
		used := before - r.Len()
		if int64(len(p)) > announced || len(p) > limit {
			t.Fatalf("payload of %d bytes for %d announced (limit %d)", len(p), announced, limit)
		}
		if cap(p) > 2*len(data)+growStep {
			t.Fatalf("payload buffer of %d bytes for %d bytes of input", cap(p), len(data))
		}
		if err != nil {
			if errors.Is(err, io.EOF) && used != 0 {
				t.Fatalf("io.EOF after %d bytes of a frame", used)
			}
			if used == 0 && !errors.Is(err, io.EOF) {
				t.Fatalf("%v without reading a byte", err)
			}
			return
		}
		buf = p
	}
}

func FuzzReadRequest(f *testing.F) {
	f.Add(unhex(f, "0a000000 c8000000 01 04 07000000 04000000 01000000"), 16)
	f.Add(unhex(f, "03000000 09000000 ff"), 16)
	f.Add(unhex(f, "ffffffff 01000000 aa"), math.MaxInt)
	f.Add(unhex(f, "06000000 02000000 aabb"), 1)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		limit = max(limit, 0)
		readAll(t, data, limit, func(r io.Reader, buf []byte) (int64, []byte, error) {
			start := len(data) - r.(*bytes.Reader).Len()
			h, p, err := ReadRequest(r, buf, limit)
			end := len(data) - r.(*bytes.Reader).Len()
			if err == nil && !bytes.Equal(AppendRequest(nil, h.Code, p), data[start:end]) {
				t.Fatalf("%+v with %d payload bytes does not re-encode as read", h, len(p))
			}
			var size *SizeError
			if errors.As(err, &size) && (len(p) != 0 || size.Size <= int64(limit)) {
				t.Fatalf("size error %+v with %d bytes read", size, len(p))
			}
			// A refused frame is skipped as a server does, to read on.
			if errors.Is(err, ErrShortFrame) || errors.Is(err, ErrTooLarge) {
				if _, err := io.CopyN(io.Discard, r, h.PayloadSize()); err == nil {
					return h.PayloadSize(), p, nil
				}
			}
			return h.PayloadSize(), p, err
		})
	})
}

func FuzzReadReply(f *testing.F) {
	f.Add(unhex(f, "00000000 04000000 01000000 2a000000 00000000"), 16)
	f.Add(unhex(f, "00000000 01000000 aa"), 16)
	f.Add(unhex(f, "00000000 ffffffff aa"), math.MaxInt)
	f.Add(unhex(f, "2a000000 02000000 aabb"), 1)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		limit = max(limit, 0)
		readAll(t, data, limit, func(r io.Reader, buf []byte) (int64, []byte, error) {
			h, p, err := ReadReply(r, buf, limit)
			if !h.HasBody() && len(p) != 0 {
				t.Fatalf("%+v read a payload of %d bytes", h, len(p))
			}
			if err == nil && h.HasBody() && int64(len(p)) != int64(h.Length) {
				t.Fatalf("%+v read %d bytes", h, len(p))
			}
			if h.HasBody() {
				return int64(h.Length), p, err
			}
			return 0, p, err
		})
	})
}
