package iggytest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

// vsrConn is one client connection speaking Iggy's VSR protocol (0.9 or 0.10).
// A connection serves one request at a time; replies and evictions from other
// goroutines (heartbeat, EvictClients) are serialised by wmu.
type vsrConn struct {
	b      *Broker
	nc     net.Conn // nil when driven by a test over a reader
	w      io.Writer
	wmu    sync.Mutex
	budget int // requests served before a forced close; 0 = unlimited
	pinned vsr.Dialect
	// dialect is the login's (or the pinned) dialect; guarded by Broker.mu
	// once a session is bound.
	dialect  vsr.Dialect
	sess     *session     // the session this connection last bound; guarded by Broker.mu
	lastSeen atomic.Int64 // unix nanoseconds of the last request received
	rbuf     []byte
	wbuf     []byte
	hbuf     [vsr.HeaderSize]byte
}

func newVSRConn(b *Broker, nc net.Conn, pinned vsr.Dialect, budget int) *vsrConn {
	c := &vsrConn{b: b, nc: nc, pinned: pinned, dialect: pinned, budget: budget}
	if nc != nil {
		c.w = nc
	}
	c.lastSeen.Store(time.Now().UnixNano())
	return c
}

var errFrameSize = errors.New("iggytest: VSR frame size outside 256..64 MiB")

// serve answers requests from r until it fails or a fault hook closes the
// connection; then the session bound to this connection is released (a TCP
// disconnect logs out, as on 0.9).
func (c *vsrConn) serve(r io.Reader) error {
	defer c.b.unbind(c)
	var hdr [vsr.HeaderSize]byte
	for served := 1; ; {
		// A legacy frame is shorter than a header: like a real VSR server,
		// wait for 256 bytes whatever they are.
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		size := le32(hdr[48:])
		if size < vsr.HeaderSize || size > vsr.MaxFrameSize {
			return fmt.Errorf("%w: %d", errFrameSize, size)
		}
		body, err := readGrowing(r, c.rbuf[:0], int(size-vsr.HeaderSize))
		c.rbuf = body
		if err != nil {
			return err
		}
		c.lastSeen.Store(time.Now().UnixNano())
		if hdr[60] != vsr.CommandRequest {
			continue // not a client request: dropped
		}
		h, err := vsr.DecodeRequestHeader(hdr[:], vsr.V012) // 0.12 reads the context too
		if err != nil || vsr.ValidateRequest(&h) != nil {
			c.b.cfg.log.Debug("iggytest dropping VSR request with an invalid header", "err", err)
			continue // the real server drops it without a reply
		}
		reply, closeNow := c.handle(&h, body)
		if closeNow {
			return nil
		}
		if reply == nil {
			continue
		}
		if err := c.write(reply, true); err != nil {
			return err
		}
		if c.budget > 0 && served >= c.budget {
			return nil
		}
		served++
	}
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// write sends one frame; replies wait for DelayReplies.
func (c *vsrConn) write(frame []byte, delayed bool) error {
	if d := time.Duration(c.b.delay.Load()); delayed && d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.b.done:
			t.Stop()
			return net.ErrClosed
		}
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.w == nil {
		return net.ErrClosed
	}
	_, err := c.w.Write(frame)
	return err
}

// evict sends an eviction frame and, when closeConn, closes the connection.
func (c *vsrConn) evict(client vsr.U128, reason vsr.EvictionReason, closeConn bool) {
	frame := vsr.AppendEviction(nil, &vsr.Eviction{Client: client, Reason: reason})
	_ = c.write(frame, false)
	if closeConn && c.nc != nil {
		_ = c.nc.Close()
	}
}

// window is the login gate: the dialect the broker is pinned to (0 when not) and
// the versions it reports in an IncompatibleProtocol eviction.
func (c *vsrConn) window() (d vsr.Dialect, lo, hi vsr.Version) {
	if c.pinned != 0 {
		return c.pinned, c.pinned.Version(), c.pinned.Version()
	}
	return 0, vsr.V011.Version(), vsr.V012.Version()
}

// dialectNow is the connection's dialect for replies (0.9's before a login).
func (c *vsrConn) dialectNow() vsr.Dialect {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	if c.dialect == 0 {
		return vsr.V011
	}
	return c.dialect
}

// handle executes one validated request; a nil reply means nothing is sent.
func (c *vsrConn) handle(h *vsr.RequestHeader, body []byte) (reply []byte, closeNow bool) {
	b := c.b
	code := vsr.CodeOf(h)
	action, status := b.takeHook(code)
	switch action {
	case hookCloseBefore:
		return nil, true
	case hookFail:
		return c.reply(h, c.dialectNow(), status, nil), false
	}
	if h.Operation == vsr.OpNonReplicated && (code == vsr.CodeLogin || code == vsr.CodeLoginPAT || code == 38 || code == 44) {
		return c.eviction(h, vsr.EvictMalformedLogin), false // the legacy login codes, or login as a read
	}
	if h.Operation == vsr.OpRegister {
		reply = c.login(h, body)
		if action == hookCloseAfter {
			return nil, true
		}
		return reply, false
	}

	var out []byte
	var d vsr.Dialect
	if code == vsr.CodeSend {
		// Decode and copy the batch before taking the lock.
		d = c.dialectNow()
		send, st := decodeVSRSend(body, d)
		b.mu.Lock()
		s, deny := c.authorize(h, code)
		if deny != nil {
			b.mu.Unlock()
			return deny, false
		}
		out = c.start()
		if st == 0 && d == vsr.V011 && !h.RequestChecksum.IsZero() && h.RequestChecksum != vsr.BodyChecksum(body) {
			st = vsr.StatusInvalidFormat
		}
		if st == 0 {
			out, st = c.execSend(h, s, send, out)
		}
		b.mu.Unlock()
		status = st
	} else {
		b.mu.Lock()
		s, deny := c.authorize(h, code)
		if deny != nil {
			b.mu.Unlock()
			return deny, false
		}
		d = c.dialect
		out = c.start()
		if d == vsr.V011 && !h.RequestChecksum.IsZero() && h.RequestChecksum != vsr.BodyChecksum(body) {
			status = vsr.StatusInvalidFormat // 0.11 verifies a non-zero stamp
		} else {
			out, status = c.exec(code, h, s, body, out)
		}
		d = c.dialect // BindSession may set it
		b.mu.Unlock()
	}
	if action == hookCloseAfter {
		return nil, true
	}
	if status != 0 {
		out = out[:vsr.HeaderSize]
	}
	b.cfg.log.Debug("iggytest VSR request", "code", code, "status", status, "reply_bytes", len(out)-vsr.HeaderSize)
	return c.finish(h, d, status, out), false
}

// authorize finds the session a request names; b.mu held. Without one, only Ping
// is served: other reads get status 40, other operations Eviction NoSession. A
// request naming an older session of its client id (one displaced by a later
// login) gets Eviction SessionTooLow.
func (c *vsrConn) authorize(h *vsr.RequestHeader, code uint32) (*session, []byte) {
	s := c.b.sessions[h.Client]
	if s != nil && s.conn == c && h.Session == s.number {
		return s, nil
	}
	d := c.dialect
	if d == 0 {
		d = vsr.V011
	}
	if s != nil && h.Session != 0 && h.Session < s.number {
		return nil, vsr.AppendEviction(nil, &vsr.Eviction{Client: h.Client, Reason: vsr.EvictSessionTooLow})
	}
	switch {
	case h.Operation == vsr.OpNonReplicated && code == vsr.CodePing:
		return nil, c.finish(h, d, 0, c.start())
	case h.Operation == vsr.OpNonReplicated && code == vsr.CodeBindSession && c.pinned != vsr.V011:
		return nil, nil // 0.10's BindSession attaches an unbound connection
	case h.Operation == vsr.OpNonReplicated:
		return nil, c.finish(h, d, vsr.StatusUnauthenticated, c.start())
	}
	return nil, vsr.AppendEviction(nil, &vsr.Eviction{Client: h.Client, Reason: vsr.EvictNoSession})
}

// start returns the reply buffer with room for the header.
func (c *vsrConn) start() []byte {
	out := c.wbuf[:0]
	var zero [vsr.HeaderSize]byte
	return append(out, zero[:]...)
}

// finish writes the reply header in front of out's body.
func (c *vsrConn) finish(h *vsr.RequestHeader, d vsr.Dialect, status uint32, out []byte) []byte {
	rh := vsr.ReplyHeader{
		Size: uint32(len(out)), RequestChecksum: h.RequestChecksum, Client: h.Client,
		Request: h.Request, Operation: h.Operation, Status: status, PartitionIncarnation: h.PartitionIncarnation,
	}
	copy(out, vsr.AppendReplyHeader(c.hbuf[:0], d, &rh))
	c.wbuf = out
	return out
}

func (c *vsrConn) reply(h *vsr.RequestHeader, d vsr.Dialect, status uint32, body []byte) []byte {
	return c.finish(h, d, status, append(c.start(), body...))
}

func (c *vsrConn) eviction(h *vsr.RequestHeader, reason vsr.EvictionReason) []byte {
	c.b.cfg.log.Debug("iggytest VSR eviction", "reason", reason.String())
	return vsr.AppendEviction(c.wbuf[:0], &vsr.Eviction{Client: h.Client, Reason: reason})
}

// login answers a Register (codes 40/45): the version gate, credentials, then a
// session for the client id, bound to this connection.
func (c *vsrConn) login(h *vsr.RequestHeader, body []byte) []byte {
	b := c.b
	ver, err := vsr.LoginVersion(body)
	if err != nil {
		return c.eviction(h, vsr.EvictMalformedLogin)
	}
	d, lo, hi := c.window()
	gate := d
	if gate == 0 {
		gate, _ = vsr.DialectOf(ver)
	}
	if gate == 0 || !vsr.Compatible(gate, gate.Version(), gate.Version(), ver) {
		return vsr.AppendEviction(c.wbuf[:0], &vsr.Eviction{Client: h.Client, Reason: vsr.EvictIncompatibleProtocol, ServerMin: lo, ServerMax: hi})
	}
	if gate == vsr.V011 && !h.RequestChecksum.IsZero() && h.RequestChecksum != vsr.BodyChecksum(body) {
		return c.reply(h, gate, vsr.StatusInvalidFormat, nil)
	}
	l, err := vsr.DecodeLogin(body, gate)
	if err != nil {
		return c.eviction(h, vsr.EvictMalformedLogin)
	}
	if l.PAT {
		if !b.cfg.tokens[l.Token] {
			return c.eviction(h, vsr.EvictInvalidToken)
		}
	} else if pw, ok := b.cfg.users[l.Username]; !ok || pw != l.Password {
		return c.eviction(h, vsr.EvictInvalidCredentials)
	}
	b.mu.Lock()
	s := b.sessions[h.Client]
	if s == nil {
		s = &session{id: b.nextSession.Add(1), authed: true, vsr: true, client: h.Client}
		b.sessions[h.Client] = s
	}
	if prev := c.sess; prev != nil && prev != s && prev.conn == c {
		b.releaseLocked(prev) // this connection logged in as another client
	}
	b.nextSessionNo++
	s.number, s.dialect, s.secret, s.conn = b.nextSessionNo, gate, l.BindSecret, c
	c.sess, c.dialect = s, gate
	number := s.number
	b.mu.Unlock()
	c.lastSeen.Store(time.Now().UnixNano())
	out := vsr.AppendResultOK(c.start())
	out = vsr.AppendLoginReply(out, &vsr.LoginReply{UserID: 0, Session: number, ServerVersion: gate.Version(), ServerName: serverName(gate)})
	b.cfg.log.Debug("iggytest VSR login", "client", h.Client.String(), "session", number, "dialect", gate.String())
	return c.finish(h, gate, 0, out)
}

func serverName(d vsr.Dialect) string {
	if d >= vsr.V012 {
		return "0.10.0"
	}
	return "0.9.0"
}

// unbind releases the session bound to c when its connection ends.
func (b *Broker) unbind(c *vsrConn) {
	b.mu.Lock()
	if s := c.sess; s != nil && s.conn == c {
		b.releaseLocked(s)
	}
	b.mu.Unlock()
	c.wmu.Lock()
	c.w = nil
	c.wmu.Unlock()
}

// releaseLocked ends session s: it leaves every group (full rebalance) and is
// forgotten. b.mu held.
func (b *Broker) releaseLocked(s *session) {
	b.leaveAllLocked(s)
	if b.sessions[s.client] == s {
		delete(b.sessions, s.client)
	}
	s.conn = nil
}

// heartbeatLoop evicts silent group members (reason 13) until Close.
func (b *Broker) heartbeatLoop() {
	defer b.wg.Done()
	limit := b.cfg.heartbeat * 6 / 5
	period := min(max(b.cfg.heartbeat/5, 5*time.Millisecond), time.Second)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-b.done:
			return
		case now := <-t.C:
			b.evictStale(now, limit)
		}
	}
}

// evictStale evicts every VSR session holding a group membership whose
// connection sent nothing for limit.
func (b *Broker) evictStale(now time.Time, limit time.Duration) {
	type victim struct {
		c      *vsrConn
		client vsr.U128
	}
	var victims []victim
	b.mu.Lock()
	for _, s := range b.memberSessionsLocked() {
		c := s.conn
		if c == nil || now.Sub(time.Unix(0, c.lastSeen.Load())) < limit {
			continue
		}
		b.releaseLocked(s)
		victims = append(victims, victim{c, s.client})
	}
	b.mu.Unlock()
	for _, v := range victims {
		b.cfg.log.Debug("iggytest VSR heartbeat eviction", "client", v.client.String())
		v.c.evict(v.client, vsr.EvictStaleClient, true)
	}
}

// memberSessionsLocked lists the VSR sessions that are members of a group.
func (b *Broker) memberSessionsLocked() []*session {
	seen := map[*session]bool{}
	var out []*session
	b.eachGroupLocked(func(_ *stream, _ *topic, g *group) {
		for _, m := range g.members {
			if m.sess.vsr && !seen[m.sess] {
				seen[m.sess] = true
				out = append(out, m.sess)
			}
		}
	})
	return out
}

func (b *Broker) eachGroupLocked(fn func(*stream, *topic, *group)) {
	for _, st := range b.streams {
		if st == nil {
			continue
		}
		for _, t := range st.topics {
			if t == nil {
				continue
			}
			for _, g := range t.groups {
				if g != nil {
					fn(st, t, g)
				}
			}
		}
	}
}

// EvictClients sends an eviction with reason to every VSR session, ends the
// sessions (they leave their groups) and closes their connections. It returns
// how many sessions it evicted.
func (b *Broker) EvictClients(reason vsr.EvictionReason) int {
	type victim struct {
		c      *vsrConn
		client vsr.U128
	}
	var victims []victim
	b.mu.Lock()
	for _, s := range b.sessions {
		if s.conn != nil {
			victims = append(victims, victim{s.conn, s.client})
		}
	}
	for _, v := range victims {
		b.releaseLocked(b.sessions[v.client])
	}
	b.mu.Unlock()
	for _, v := range victims {
		v.c.evict(v.client, reason, true)
	}
	return len(victims)
}

// Sessions is the number of live VSR sessions (bound to a connection).
func (b *Broker) Sessions() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sessions)
}
