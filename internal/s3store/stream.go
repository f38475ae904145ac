package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Stream uploads what write produces without holding the whole object: the
// bytes fill a part buffer, and full parts are uploaded by a second goroutine
// while write fills the next one, so at most two parts are in memory. A body
// no larger than one part goes out as a single PutObject. Both ways the write
// is create-only, like Put's: an existing key is success (Result.Existed)
// only if it holds exactly the bytes written, else a *ConflictError. On any
// failure — write's error, a part failing for good, ctx ending — the
// multipart upload is aborted (within CleanupTimeout) so no orphaned parts
// remain. With obj.OmitEmpty an empty body writes nothing.
func (u *Uploader) Stream(ctx context.Context, obj Object, write func(w io.Writer) error) (Result, error) {
	if err := u.check(obj.Key); err != nil {
		return Result{}, err
	}
	if obj.Gate != nil {
		if err := obj.Gate.Wait(ctx); err != nil {
			return Result{}, wrapKey(obj.Key, err)
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s := &streamer{u: u, obj: obj, ctx: ctx, cancel: cancel, free: make(chan []byte, 2)}
	defer s.release()

	werr := write(s)
	if werr == nil {
		werr = context.Cause(ctx)
	}
	if s.m == nil {
		if werr != nil {
			return Result{}, wrapKey(obj.Key, werr)
		}
		if obj.OmitEmpty && len(s.cur) == 0 {
			return Result{}, nil
		}
		return u.putSingle(ctx, obj, s.cur)
	}
	if werr == nil && len(s.cur) > 0 {
		werr = s.send(s.cur)
		s.cur = nil
	}
	close(s.parts)
	s.wg.Wait()
	// A part's own failure is the cause (write saw only its echo), and the
	// last part may fail after write has returned.
	if s.partErr != nil {
		werr = s.partErr
	}
	if werr != nil {
		return s.m.fail(ctx, wrapKey(obj.Key, werr))
	}
	return s.m.complete(ctx)
}

func wrapKey(key string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return fmt.Errorf("upload: %s: %w", key, err)
}

// streamer is the io.Writer handed to Stream's write function.
type streamer struct {
	u      *Uploader
	obj    Object
	ctx    context.Context
	cancel context.CancelCauseFunc

	cur     []byte      // the buffer being filled
	free    chan []byte // buffers the part uploader is done with
	flushed int         // parts handed off so far
	held    int64       // bytes of buffer capacity counted in u.liveBuffers
	owned   [][]byte    // full-size buffers, returned to u.parts at the end
	m       *multipart  // nil until the first part is handed off
	parts   chan []byte
	wg      sync.WaitGroup

	partErr error // set by the part goroutine before it exits
}

func (s *streamer) Write(p []byte) (int, error) {
	if err := context.Cause(s.ctx); err != nil {
		return 0, err
	}
	size := int(s.u.opts.PartSize)
	n := 0
	for len(p) > 0 {
		// A full part is handed off only when more bytes follow, so a body
		// of exactly one part still becomes a single PutObject.
		if len(s.cur) == size {
			if err := s.flush(); err != nil {
				return n, err
			}
		}
		if len(s.cur) == cap(s.cur) {
			s.grow(len(p))
		}
		k := copy(s.cur[len(s.cur):cap(s.cur)], p)
		s.cur = s.cur[:len(s.cur)+k]
		p = p[k:]
		n += k
	}
	return n, nil
}

// grow enlarges the first buffer: a recycled part buffer if there is one,
// else geometrically up to one part, so small objects never pay for a part.
func (s *streamer) grow(need int) {
	size := s.u.opts.PartSize
	if len(s.cur) == 0 && cap(s.cur) == 0 {
		if p, ok := s.u.parts.Get().(*[]byte); ok && int64(cap(*p)) == size {
			s.cur = s.own((*p)[:0])
			return
		}
	}
	c := max(int64(2*cap(s.cur)), int64(len(s.cur)+need), 64<<10)
	c = min(c, size)
	buf := make([]byte, len(s.cur), c)
	copy(buf, s.cur)
	s.account(c - int64(cap(s.cur)))
	s.cur = buf
	if c == size {
		s.owned = append(s.owned, buf)
	}
}

// own records a full-size buffer taken from the pool.
func (s *streamer) own(buf []byte) []byte {
	s.account(int64(cap(buf)))
	s.owned = append(s.owned, buf)
	return buf
}

func (s *streamer) takeBuffer() []byte {
	if p, ok := s.u.parts.Get().(*[]byte); ok && int64(cap(*p)) == s.u.opts.PartSize {
		return s.own((*p)[:0])
	}
	return s.own(make([]byte, 0, s.u.opts.PartSize))
}

func (s *streamer) account(delta int64) {
	s.held += delta
	s.u.liveBuffers.Add(delta)
}

// release returns the part buffers for reuse; every goroutine and request
// body using them has finished by now.
func (s *streamer) release() {
	for _, buf := range s.owned {
		buf = buf[:0]
		s.u.parts.Put(&buf)
	}
	s.owned = nil
	s.u.liveBuffers.Add(-s.held)
	s.held = 0
}

// flush hands the full buffer to the part goroutine (starting the multipart
// upload first) and takes an empty one.
func (s *streamer) flush() error {
	if s.m == nil {
		m, err := s.u.startMultipart(s.ctx, s.obj)
		if err != nil {
			return err
		}
		s.m = m
		s.parts = make(chan []byte)
		s.wg.Add(1)
		go s.uploadParts()
	}
	if err := s.send(s.cur); err != nil {
		return err
	}
	s.flushed++
	s.cur = nil
	if s.flushed == 1 { // the second and last buffer
		s.cur = s.takeBuffer()
		return nil
	}
	select {
	case buf := <-s.free:
		s.cur = buf[:0]
		return nil
	case <-s.ctx.Done():
		return context.Cause(s.ctx)
	}
}

func (s *streamer) send(buf []byte) error {
	select {
	case s.parts <- buf:
		return nil
	case <-s.ctx.Done():
		return context.Cause(s.ctx)
	}
}

func (s *streamer) uploadParts() {
	defer s.wg.Done()
	for buf := range s.parts {
		if s.partErr == nil {
			if err := s.m.uploadPart(s.ctx, buf); err != nil {
				s.partErr = err
				s.cancel(err)
			}
		}
		s.free <- buf
	}
}
