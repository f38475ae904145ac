package iggytest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"slices"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/legacywire"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

// session is a client's state: on 0.8 one per TCP connection; on VSR one per
// client id (sessions and group memberships outlive a connection's binding).
type session struct {
	id     uint32
	authed bool

	// VSR only; guarded by Broker.mu.
	vsr     bool
	client  vsr.U128
	number  uint64 // the session number of the login reply
	dialect vsr.Dialect
	secret  [32]byte // 0.12 bind secret
	conn    *vsrConn // the connection the session is bound to
}

type conn struct {
	b      *Broker
	nc     net.Conn
	sess   *session
	budget int // requests served before a forced close; 0 = unlimited
	rbuf   []byte
	wbuf   []byte
	done   chan struct{} // closed once serve has cleaned up (memberships dropped)
}

func (c *conn) serve() {
	b := c.b
	log := b.cfg.log.With("client", c.sess.id, "remote", c.nc.RemoteAddr().String())
	log.Debug("iggytest connection opened")
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var err error
	if d, ok := c.speaksVSR(r); ok {
		v := newVSRConn(b, c.nc, d, c.budget)
		err = v.serve(r)
		_ = c.nc.Close()
	} else {
		err = c.loop(r, c.nc)
		_ = c.nc.Close()
		b.dropSession(c.sess)
	}
	b.connMu.Lock()
	delete(b.conns, c)
	b.connMu.Unlock()
	close(c.done)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		log.Debug("iggytest connection ended", "err", err)
		return
	}
	log.Debug("iggytest connection closed")
}

// speaksVSR decides the connection's protocol: the pinned one, else by its first
// 4 bytes (a legacy frame starts with a non-zero length, a VSR header with the
// zero checksum). d is the pinned VSR dialect, 0 when the login decides.
func (c *conn) speaksVSR(r *bufio.Reader) (d vsr.Dialect, ok bool) {
	switch c.b.cfg.protocol {
	case Protocol08:
		return 0, false
	case Protocol09:
		return vsr.V011, true
	case Protocol010:
		return vsr.V012, true
	}
	first, err := r.Peek(requestLengthFieldSize)
	if err != nil {
		return 0, false // the legacy loop meets the same error
	}
	return 0, isZero(first)
}

// loop answers frames from r on w until r fails or a fault hook closes the connection.
func (c *conn) loop(r io.Reader, w io.Writer) error {
	for served := 1; ; served++ {
		reply, closeNow, err := c.handle(r)
		if err != nil {
			return err
		}
		if closeNow {
			return nil
		}
		if d := time.Duration(c.b.delay.Load()); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-c.b.done:
				t.Stop()
				return net.ErrClosed
			}
		}
		if _, err := w.Write(reply); err != nil {
			return err
		}
		if c.budget > 0 && served >= c.budget {
			return nil
		}
	}
}

// handle reads one frame and returns the complete reply (header included) in a buffer
// reused by the next call.
func (c *conn) handle(r io.Reader) (reply []byte, closeNow bool, err error) {
	// The payload grows only as data arrives, so a length field alone cannot
	// make the broker allocate 64 MiB.
	h, payload, err := legacywire.ReadRequest(r, c.rbuf, maxSendPayload)
	c.rbuf = payload
	if errors.Is(err, legacywire.ErrShortFrame) || errors.Is(err, legacywire.ErrTooLarge) {
		// A real 0.8.0 server reads the code (4 bytes) whatever the length
		// says, then skips the rest of the frame, then answers.
		if _, err := io.CopyN(io.Discard, r, h.PayloadSize()); err != nil {
			return nil, false, err
		}
		return c.errorReply(0, fail(StatusInvalidCommand, "invalid frame length %d", h.Length)), false, nil
	}
	if err != nil {
		return nil, false, err
	}
	code := h.Code
	if code != CodeSendMessages && len(payload) > maxControlPayload {
		return c.errorReply(code, fail(StatusInvalidCommand, "payload of %d bytes exceeds %d", len(payload), maxControlPayload)), false, nil
	}
	action, status := c.b.takeHook(code)
	switch action {
	case hookCloseBefore:
		return nil, true, nil
	case hookFail:
		return c.errorReply(code, fail(status, "injected failure")), false, nil
	}
	req, serr := decodeRequest(code, payload)
	if serr != nil {
		return c.errorReply(code, serr), false, nil
	}
	if needsAuth(code) && !c.sess.authed {
		return c.errorReply(code, fail(StatusUnauthenticated, "command %d needs authentication", code)), false, nil
	}
	var zero [legacywire.HeaderSize]byte
	out, serr := req.exec(c.b, c.sess, append(c.wbuf[:0], zero[:]...))
	if serr != nil {
		return c.errorReply(code, serr), false, nil
	}
	if action == hookCloseAfter {
		return nil, true, nil
	}
	c.wbuf = out
	c.b.cfg.log.Debug("iggytest request", "client", c.sess.id, "code", code, "reply_bytes", len(out)-legacywire.HeaderSize)
	return c.finish(out, StatusOK), false, nil
}

// readGrowing reads n bytes into buf (from length 0), growing it only as data
// arrives.
func readGrowing(r io.Reader, buf []byte, n int) ([]byte, error) {
	for len(buf) < n {
		chunk := min(n-len(buf), max(len(buf), 64<<10))
		buf = slices.Grow(buf, chunk)
		got, err := io.ReadFull(r, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+got]
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// finish fills the response header in front of the payload. No reply is 1 byte long:
// the SDK would skip that byte and lose sync.
func (c *conn) finish(out []byte, status uint32) []byte {
	legacywire.ReplyHeader{Status: status, Length: uint32(len(out) - legacywire.HeaderSize)}.Put(out)
	return out
}

func (c *conn) errorReply(code uint32, err *StatusError) []byte {
	c.b.cfg.log.Debug("iggytest request failed", "client", c.sess.id, "code", code, "status", err.Status, "reason", err.Reason)
	var zero [legacywire.HeaderSize]byte
	out := append(c.wbuf[:0], zero[:]...)
	c.wbuf = out
	return c.finish(out, err.Status)
}
