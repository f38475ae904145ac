package s3store

import (
	"bytes"
	"errors"
	"io"
	"sync"
)

// errFenced is what a request body returns once its attempt is over.
var errFenced = errors.New("upload: request body read after its attempt ended")

// fencedBody is a request body over a slice the uploader will reuse. The
// HTTP transport may go on reading a body after RoundTrip has returned (an
// early error reply); fence makes any such late read fail instead of racing
// with the next writer of the slice. With a gate, the last byte is handed
// over only once the gate is open (see Gate).
type fencedBody struct {
	mu     sync.Mutex
	data   []byte
	r      *bytes.Reader
	fenced bool
	ended  chan struct{} // closed by fence: wakes a read held at the gate
	gate   *Gate
	passed bool // the gate was found open
}

func newFencedBody(data []byte, gate *Gate) *fencedBody {
	return &fencedBody{data: data, r: bytes.NewReader(data), ended: make(chan struct{}), gate: gate, passed: gate == nil}
}

func (b *fencedBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fenced {
		return 0, errFenced
	}
	if rest := b.r.Len(); !b.passed && rest > 0 && rest <= len(p) {
		if rest > 1 {
			return b.r.Read(p[:rest-1])
		}
		if err := b.passGate(); err != nil {
			return 0, err
		}
	}
	return b.r.Read(p)
}

// passGate waits, with b.mu released meanwhile, until the gate opens or
// the body is fenced. It is called, and returns, with b.mu held.
func (b *fencedBody) passGate() error {
	b.mu.Unlock()
	select {
	case <-b.gate.done:
	case <-b.ended:
	}
	b.mu.Lock()
	if b.fenced {
		return errFenced
	}
	if err := b.gate.result(); err != nil {
		return err
	}
	b.passed = true
	return nil
}

// maxWrite bounds the bytes of one Write in WriteTo: fence waits for a
// write in flight, and a connection may take a while to drain one.
const maxWrite = 1 << 20

// WriteTo writes the rest of the body to w from the slice itself, under
// the same fence and gate as Read: the connection's ReadFrom hands the
// body here (see bodyConn), sparing a copy of every byte.
func (b *fencedBody) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		n, more, err := b.writeSome(w)
		total += int64(n)
		if err != nil || !more {
			return total, err
		}
	}
}

// writeSome writes the next piece of the body to w; more is false once
// nothing is left.
func (b *fencedBody) writeSome(w io.Writer) (n int, more bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fenced {
		return 0, false, errFenced
	}
	rest := b.r.Len()
	if rest == 0 {
		return 0, false, nil
	}
	if !b.passed && rest == 1 {
		if err := b.passGate(); err != nil {
			return 0, false, err
		}
	}
	size := min(rest, maxWrite)
	if !b.passed && size == rest {
		size-- // the last byte waits for the gate
	}
	start := len(b.data) - rest
	n, err = w.Write(b.data[start : start+size])
	if _, serr := b.r.Seek(int64(n), io.SeekCurrent); serr != nil && err == nil {
		err = serr
	}
	if err == nil && n < size {
		err = io.ErrShortWrite
	}
	return n, err == nil, err
}

func (b *fencedBody) Seek(offset int64, whence int) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fenced {
		return 0, errFenced
	}
	return b.r.Seek(offset, whence)
}

// fence ends the body: after it returns no read touches the slice.
func (b *fencedBody) fence() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.fenced {
		b.fenced = true
		close(b.ended)
	}
}

var (
	_ io.ReadSeeker = (*fencedBody)(nil)
	_ io.WriterTo   = (*fencedBody)(nil)
)
