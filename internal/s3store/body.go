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
// with the next writer of the slice.
type fencedBody struct {
	mu     sync.Mutex
	r      *bytes.Reader
	fenced bool
}

func newFencedBody(data []byte) *fencedBody { return &fencedBody{r: bytes.NewReader(data)} }

func (b *fencedBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fenced {
		return 0, errFenced
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
	b.fenced = true
	b.mu.Unlock()
}

var _ io.ReadSeeker = (*fencedBody)(nil)
