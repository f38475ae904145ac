package vsrconn

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

// link is one TCP (or TLS) connection to one node. Requests go one at a
// time (the protocol has no correlation id for reads; the Client
// serialises them); each has a deadline, and a call that outlives it cuts
// the link, since the reply stream cannot be resynchronised after that.
type link struct {
	addr     string // as dialed
	nc       net.Conn
	r        *bufio.Reader
	dialect  vsr.Dialect
	maxReply uint32

	wbuf []byte
	hdr  [vsr.HeaderSize]byte

	stateMu  sync.Mutex
	lost     error // why the link is unusable; nil while it works
	lastSent time.Time
	seq      uint64 // counts exchange starts and ends
}

// dialLink connects within timeout, completing a TLS handshake when tc is set.
func dialLink(ctx context.Context, addr string, timeout time.Duration, tc *tls.Config, maxReply uint32) (*link, error) {
	d := net.Dialer{Timeout: timeout, KeepAlive: 15 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot reach Iggy at %s within %s: %w", ErrUnreachable, addr, timeout, err)
	}
	if t, ok := nc.(*net.TCPConn); ok {
		_ = t.SetNoDelay(true)
	}
	if tc != nil {
		c := tls.Client(nc, tc)
		hctx, cancel := context.WithTimeout(ctx, timeout)
		err := c.HandshakeContext(hctx)
		cancel()
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("%w: TLS handshake with Iggy at %s (server name %q) failed: %w", ErrUnreachable, addr, tc.ServerName, err)
		}
		nc = c
	}
	return &link{addr: addr, nc: nc, r: bufio.NewReaderSize(nc, 64<<10), maxReply: maxReply, lastSent: time.Now()}, nil
}

// reply is one decoded server frame.
type reply struct {
	hdr  vsr.ReplyHeader
	body []byte
}

// cancelGrace is how long a reply may still come once the caller's
// context ends in the middle of an exchange: read in time, it leaves the
// connection usable for every other caller, where a cut would fail them all.
const cancelGrace = time.Second

// exchange sends one request and reads its reply before deadline (the
// request timeout; zero: none) and while ctx lasts, plus cancelGrace. It
// returns an *EvictedError for an eviction frame and a *LegacyServerError
// when the peer answered in Iggy 0.8's framing. Any failure other than a
// reply with a status cuts the link.
func (l *link) exchange(ctx context.Context, deadline time.Time, h *vsr.RequestHeader, body, into []byte) (reply, error) {
	if err := l.lostErr(); err != nil {
		return reply{}, err
	}
	if err := l.nc.SetDeadline(deadline); err != nil {
		return reply{}, l.cut(fmt.Errorf("%w: %w", ErrConnectionLost, err))
	}
	// The context's end shortens the deadline to cancelGrace, so that the
	// error can tell it from the request timeout. The callback may run late:
	// the exchange number keeps it off the next exchange.
	l.stateMu.Lock()
	l.seq++
	seq := l.seq
	l.stateMu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		l.stateMu.Lock()
		defer l.stateMu.Unlock()
		if grace := time.Now().Add(cancelGrace); l.seq == seq && (deadline.IsZero() || grace.Before(deadline)) {
			_ = l.nc.SetDeadline(grace)
		}
	})
	defer func() {
		stop()
		l.stateMu.Lock()
		l.seq++
		l.stateMu.Unlock()
	}()

	h.Size = uint32(vsr.HeaderSize + len(body))
	l.wbuf = vsr.AppendRequestHeader(l.wbuf[:0], l.dialect, h)
	l.wbuf = append(l.wbuf, body...)
	l.touch()
	if _, err := l.nc.Write(l.wbuf); err != nil {
		return reply{}, l.cut(l.ioError(ctx, "while a request was sent", err))
	}
	if cap(l.wbuf) > 1<<20 {
		l.wbuf = nil // a large send: do not keep its buffer
	}
	rep, err := l.read(ctx, h, into)
	if err != nil {
		return reply{}, err
	}
	return rep, nil
}

func (l *link) read(ctx context.Context, h *vsr.RequestHeader, into []byte) (reply, error) {
	if _, err := io.ReadFull(l.r, l.hdr[:8]); err != nil {
		return reply{}, l.cut(l.ioError(ctx, "before answering", err))
	}
	if isLegacyError(l.hdr[:8]) {
		return reply{}, l.cut(&LegacyServerError{Address: l.addr})
	}
	if _, err := io.ReadFull(l.r, l.hdr[8:]); err != nil {
		return reply{}, l.cut(l.ioError(ctx, "in the middle of a reply header", err))
	}
	// Within the protocol's frame limit, a reply larger than the link keeps
	// is read past (a poll may then ask for fewer messages); beyond it the
	// size is a lie, and the link is cut before any of it is read.
	cmd, size, err := vsr.FrameKind(l.hdr[:], max(l.maxReply, vsr.MaxFrameSize))
	if err == nil && size > l.maxReply && cmd == vsr.CommandReply {
		return reply{}, l.skip(ctx, h, size)
	}
	if err == nil && size > l.maxReply {
		_, _, err = vsr.FrameKind(l.hdr[:], l.maxReply)
	}
	if err != nil {
		return reply{}, l.cut(malformedCut(err))
	}
	switch cmd {
	case vsr.CommandEviction:
		ev, err := vsr.DecodeEviction(l.hdr[:])
		if err != nil {
			return reply{}, l.cut(malformedCut(err))
		}
		return reply{}, l.cut(&EvictedError{Eviction: ev, Address: l.addr, Dialect: l.dialect})
	case vsr.CommandRequest:
		return reply{}, l.cut(malformedCut(errors.New("the server sent a request frame")))
	}
	rh, err := vsr.DecodeReplyHeader(l.hdr[:], l.dialect)
	if err != nil {
		return reply{}, l.cut(malformedCut(err))
	}
	if rh.Request != h.Request {
		return reply{}, l.cut(malformedCut(fmt.Errorf("a reply to request %d, %d was sent", rh.Request, h.Request)))
	}
	n := size - vsr.HeaderSize // bounded by maxReply above
	body := into[:0]
	if uint64(cap(body)) < uint64(n) {
		// Room to spare, so that a caller reusing it (PollInto) fits the
		// next reply of about this size behind the result section too.
		body = make([]byte, n, n+n/8)
	}
	body = body[:n]
	if _, err := io.ReadFull(l.r, body); err != nil {
		return reply{}, l.cut(l.ioError(ctx, "in the middle of a reply body", err))
	}
	return reply{hdr: rh, body: body}, nil
}

// skip reads past a well-formed reply larger than the link accepts, so the
// connection stays usable and the caller may ask for less (a poll of fewer
// messages); nothing of it is kept.
func (l *link) skip(ctx context.Context, h *vsr.RequestHeader, size uint32) error {
	rh, err := vsr.DecodeReplyHeader(l.hdr[:], l.dialect)
	if err != nil {
		return l.cut(malformedCut(err))
	}
	if rh.Request != h.Request {
		return l.cut(malformedCut(fmt.Errorf("a reply to request %d, %d was sent", rh.Request, h.Request)))
	}
	n := int64(size) - vsr.HeaderSize
	prefix := make([]byte, min(n, vsr.PollPeekSize))
	if _, err := io.ReadFull(l.r, prefix); err != nil {
		return l.cut(l.ioError(ctx, "in the middle of a reply too large to keep", err))
	}
	if _, err := io.CopyN(io.Discard, l.r, n-int64(len(prefix))); err != nil {
		return l.cut(l.ioError(ctx, "in the middle of a reply too large to keep", err))
	}
	return &ReplyTooLargeError{Size: size, Limit: l.maxReply, Prefix: prefix}
}

// ReplyTooLargeError is a reply larger than Config.MaxReply: read past and
// dropped, the connection kept. Prefix is the start of its body (up to
// vsr.PollPeekSize bytes), for vsr.PeekPollReply.
type ReplyTooLargeError struct {
	Size, Limit uint32
	Prefix      []byte
}

func (e *ReplyTooLargeError) Error() string {
	return fmt.Sprintf("the reply of %d bytes is larger than the %d bytes accepted (skipped)", e.Size, e.Limit)
}

// isLegacyError reports the 8 bytes an Iggy 0.8 server answers a frame it
// cannot parse with: status 3 (InvalidCommand), length 0. A VSR reply
// starts with its zero checksum instead.
func isLegacyError(b []byte) bool {
	return b[0] == 3 && b[1] == 0 && b[2] == 0 && b[3] == 0 && b[4] == 0 && b[5] == 0 && b[6] == 0 && b[7] == 0
}

// ioError names what failed: the deadline, the caller's context, or the
// peer; when says where in the exchange ("before answering").
func (l *link) ioError(ctx context.Context, when string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%w: the call ended %s: %w", ErrConnectionLost, when, context.Cause(ctx))
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w: %w: the request timeout passed %s", ErrConnectionLost, ErrTimeout, when)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: the server closed the connection %s", ErrConnectionLost, when)
	case errors.Is(err, syscall.ECONNRESET):
		return fmt.Errorf("%w: the server reset the connection %s", ErrConnectionLost, when)
	}
	return fmt.Errorf("%w: %s: %w", ErrConnectionLost, when, err)
}

// cut makes the link unusable, remembering the first reason, and returns err.
func (l *link) cut(err error) error {
	l.stateMu.Lock()
	if l.lost == nil {
		l.lost = err
	}
	l.stateMu.Unlock()
	resetOnClose(l.nc)
	_ = l.nc.Close()
	return err
}

// resetOnClose makes closing nc reset the connection: a request the kernel
// still holds, after the client gave up on it, is dropped rather than
// delivered later (a replay that gave up on a send goes on from what the
// server holds, and must not see the send land behind its back).
func resetOnClose(nc net.Conn) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
}

func (l *link) lostErr() error {
	l.stateMu.Lock()
	defer l.stateMu.Unlock()
	if l.lost != nil {
		return fmt.Errorf("%w (earlier: %w)", ErrConnectionLost, l.lost)
	}
	return nil
}

func (l *link) touch() {
	l.stateMu.Lock()
	l.lastSent = time.Now()
	l.stateMu.Unlock()
}

// idleFor is how long the link has sent nothing.
func (l *link) idleFor() time.Duration {
	l.stateMu.Lock()
	defer l.stateMu.Unlock()
	return time.Since(l.lastSent)
}

func (l *link) close() {
	_ = l.cut(errClosed)
}

var errClosed = fmt.Errorf("%w: closed", ErrConnectionLost)

// malformedCut is the error of a frame that cannot be trusted: the link is
// cut with it, since what follows cannot be framed.
func malformedCut(err error) error {
	return fmt.Errorf("%w: %w (%w)", ErrMalformedReply, err, ErrConnectionLost)
}
