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
	r      *bytes.Reader
	fenced bool
	ended  chan struct{} // closed by fence: wakes a read held at the gate
	gate   *Gate
	passed bool // the gate was found open
}

func newFencedBody(data []byte, gate *Gate) *fencedBody {
	return &fencedBody{r: bytes.NewReader(data), ended: make(chan struct{}), gate: gate, passed: gate == nil}
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
		b.mu.Unlock()
		select {
		case <-b.gate.done:
		case <-b.ended:
		}
		b.mu.Lock()
		if b.fenced {
			return 0, errFenced
		}
		if err := b.gate.result(); err != nil {
			return 0, err
		}
		b.passed = true
	}
	return b.r.Read(p)
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

var _ io.ReadSeeker = (*fencedBody)(nil)
