package source

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/apache/iggy/foreign/go/client"
	"github.com/apache/iggy/foreign/go/client/tcp"
	iggcon "github.com/apache/iggy/foreign/go/contracts"
	ierror "github.com/apache/iggy/foreign/go/errors"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggyref"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsrconn"
)

// legacy is the Iggy 0.8 backend: the Go SDK v0.8.0 behind a guard (see
// guard.go) that gives it deadlines, TLS and a refusal of redirects.
type legacy struct {
	cfg Config
	cli iggcon.Client
	g   *guard

	mu  sync.Mutex
	why error // why the connection was cut, when this side cut it
}

// openLegacy dials through the guard and logs in with the SDK. A login
// that gets no answer in time is checked against the VSR protocol, so that
// iggy.protocol = 0.8 on a 0.9 or 0.10 server says so.
func openLegacy(ctx context.Context, cfg Config, tlsCfg *tls.Config) (*Conn, error) {
	g, err := dialGuard(ctx, cfg.Address, cfg.ConnectTimeout, tlsCfg)
	if err != nil {
		return nil, err
	}
	l := &legacy{cfg: cfg, g: g}
	ch := make(chan clientResult, 1)
	go func() {
		cli, err := client.NewIggyClient(client.WithTcp(tcp.WithServerAddress(g.addr())))
		ch <- clientResult{cli, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			g.cut()
			return nil, fmt.Errorf("iggy: create client for %s: %w", cfg.Address, r.err)
		}
		l.cli = r.cli
	case <-time.After(cfg.ConnectTimeout):
		return nil, l.abandon(ch, fmt.Errorf("%w: iggy client setup for %s timed out", ErrUnreachable, cfg.Address))
	case <-ctx.Done():
		return nil, l.abandon(ch, fmt.Errorf("iggy client setup for %s: %w", cfg.Address, ctx.Err()))
	}
	loginCtx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	mismatch := l.probeWhileWaiting(loginCtx, cfg, tlsCfg)
	err = l.do(loginCtx, "login", func() error {
		var err error
		if cfg.Token != "" {
			_, err = l.cli.LoginWithPersonalAccessToken(cfg.Token)
		} else {
			_, err = l.cli.LoginUser(cfg.Username, cfg.Password)
		}
		return err
	})
	if perr := mismatch(); perr != nil {
		l.close()
		return nil, perr
	}
	if refusal := g.refused(); refusal != nil {
		l.close()
		return nil, fmt.Errorf("iggy: login to %s: %w", cfg.Address, refusal)
	}
	if err != nil {
		why := l.g.reason()
		l.close()
		if why != "" {
			// Something accepted the TCP connection but did not speak Iggy
			// back: a proxy, a firewall, another service on that port.
			return nil, fmt.Errorf("iggy: login to %s as %s: %w: %s before answering; is %s the TCP address of an %s (default port 8090)?",
				cfg.Address, who(cfg), ErrConnectionLost, why, cfg.Address, serverKind(cfg.Protocol))
		}
		if refusedLegacyLogin(cfg, err) {
			return nil, fmt.Errorf("iggy: login to %s as %s: %w: %w", cfg.Address, who(cfg), ErrLoginRefused, err)
		}
		return nil, fmt.Errorf("iggy: login to %s as %s: %w", cfg.Address, who(cfg), err)
	}
	return newConn(cfg, l, "Iggy 0.8 (legacy protocol)"), nil
}

// refusedLegacyLogin says whether the SDK's login error refuses the
// credentials: one of the codes vsrconn.RefusesLogin knows, or, for a
// token, 0.8.0's answer to one it does not know (ResourceNotFound).
func refusedLegacyLogin(cfg Config, err error) bool {
	var ie ierror.IggyError
	if !errors.As(err, &ie) {
		return false
	}
	return vsrconn.RefusesLogin(uint32(ie.Code())) || cfg.Token != "" && errors.Is(err, ierror.ErrResourceNotFound)
}

// serverKind is what an error calls the server the sink expected.
func serverKind(protocol string) string {
	switch protocol {
	case Protocol08, Protocol09, Protocol010:
		return "Iggy " + protocol + " server"
	}
	return "Iggy server (0.8, 0.9 or 0.10)"
}

// probeWhileWaiting covers iggy.protocol = 0.8 on a server of Iggy 0.9 or
// 0.10, which waits for 256 header bytes and never answers the SDK's short
// login frame: when half the connect timeout has passed without an answer,
// it asks the server in the VSR protocol on a second connection, and if
// that is answered it cuts the SDK's wait. The returned func reports that
// mismatch once the login has returned.
func (l *legacy) probeWhileWaiting(ctx context.Context, cfg Config, tlsCfg *tls.Config) func() error {
	if cfg.Protocol != Protocol08 {
		return func() error { return nil }
	}
	var mu sync.Mutex
	var found error
	done := false
	t := time.AfterFunc(cfg.ConnectTimeout/2, func() {
		pcfg := cfg
		pcfg.ConnectTimeout = cfg.ConnectTimeout / 2
		err := probeVSR(ctx, pcfg, tlsCfg)
		mu.Lock()
		defer mu.Unlock()
		if err != nil && !done {
			found = err
			l.lose(err)
		}
	})
	return func() error {
		t.Stop()
		mu.Lock()
		defer mu.Unlock()
		done = true
		return found
	}
}

// probeVSR logs in with the VSR protocol; an answer in it is an error
// naming the server's release.
func probeVSR(ctx context.Context, cfg Config, tlsCfg *tls.Config) error {
	vc, err := vsrconn.Dial(ctx, vsrconn.Config{Address: cfg.Address, Username: cfg.Username, Password: cfg.Password, Token: cfg.Token,
		TLS: tlsCfg, TLSDomain: cfg.TLSDomain, ConnectTimeout: cfg.ConnectTimeout, Keepalive: -1})
	var ev *vsrconn.EvictedError
	switch {
	case err == nil:
		d := vc.Dialect()
		vc.Close()
		return &vsrconn.ProtocolError{Address: cfg.Address, Configured: Protocol08, Server: d.Server(),
			Detail: fmt.Sprintf("it did not answer an Iggy 0.8 login within %s and accepted a protocol %s one", cfg.ConnectTimeout, d.Version())}
	case errors.As(err, &ev) && ev.Eviction.Reason != 0:
		return &vsrconn.ProtocolError{Address: cfg.Address, Configured: Protocol08, Server: "0.9 or 0.10",
			Detail: fmt.Sprintf("it did not answer an Iggy 0.8 login within %s and answered the VSR protocol: %v", cfg.ConnectTimeout, err)}
	}
	return nil
}

type clientResult struct {
	cli iggcon.Client
	err error
}

// abandon gives up on a client still being created. The SDK dials our own
// loopback listener, so this only happens on a badly overloaded machine; a
// client that appears later is closed.
func (l *legacy) abandon(ch <-chan clientResult, err error) error {
	l.g.cut()
	go func() {
		if r := <-ch; r.cli != nil {
			r.cli.Close()
		}
	}()
	return err
}

// close ends the session. The SDK sends nothing on close; the server drops
// this connection's group memberships when the socket closes.
func (l *legacy) close() {
	l.g.cut() // first, so Close cannot block behind a stuck call
	if l.cli != nil {
		_ = l.cli.Close()
	}
	l.g.wait()
}

// do runs one SDK call under ctx and the request timeout. If they end
// first the connection is cut (there is no other way to interrupt SDK
// v0.8.0) and the call's goroutine is waited for, so nothing leaks. A reply
// the SDK cannot decode (its decoders index short frames and panic) is an
// error on this connection, which is cut: never a crash of the process.
func (l *legacy) do(ctx context.Context, what string, call func() error) error {
	if l.g.isCut() {
		if why := l.lostBecause(); why != nil {
			return fmt.Errorf("iggy %s: %w (earlier: %w; %w)", what, ErrConnectionLost, why, ErrNotSent)
		}
		return fmt.Errorf("iggy %s: %w (%w)", what, ErrConnectionLost, ErrNotSent)
	}
	if err := ctx.Err(); err != nil {
		// Ended before the call: nothing goes out (a replay's send past its
		// lease must not reach the server).
		return fmt.Errorf("iggy %s: not sent: %w (%w)", what, context.Cause(ctx), ErrNotSent)
	}
	if d := l.cfg.RequestTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, fmt.Errorf("%w: no reply within %s (iggy.request_timeout / IGGY_REQUEST_TIMEOUT)", ErrTimeout, d))
		defer cancel()
	}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				err := fmt.Errorf("%w (%v)", ErrMalformedReply, r)
				l.lose(fmt.Errorf("%s: %w", what, err))
				done <- err
			}
		}()
		done <- call()
	}()
	select {
	case err := <-done:
		if errors.Is(err, ErrMalformedReply) {
			return fmt.Errorf("iggy %s at %s: %w: %w", what, l.cfg.Address, ErrConnectionLost, err)
		}
		if err != nil && l.g.isCut() {
			why := l.g.reason()
			if why == "" {
				why = "the connection was closed"
			}
			return fmt.Errorf("iggy %s at %s: %s: %w%s", what, l.cfg.Address, why, ErrConnectionLost, sdkDetail(err))
		}
		return err
	case <-ctx.Done():
		l.lose(fmt.Errorf("%s: %w", what, context.Cause(ctx)))
		<-done
		return fmt.Errorf("iggy %s at %s: no answer in time: %w: %w", what, l.cfg.Address, ErrConnectionLost, context.Cause(ctx))
	}
}

// lose cuts the connection, remembering why (the first reason wins) so that
// every later call can say it.
func (l *legacy) lose(why error) {
	l.mu.Lock()
	if l.why == nil {
		l.why = why
	}
	l.mu.Unlock()
	l.g.cut()
}

func (l *legacy) lostBecause() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.why
}

func (l *legacy) lost() bool { return l.g.isCut() }

// sdkDetail is the SDK's own error text when it says more than SDK v0.8.0's
// bare "error" for a dropped connection.
func sdkDetail(err error) string {
	if msg := err.Error(); msg != "" && msg != "error" {
		return " (" + msg + ")"
	}
	return ""
}

func sdkID[T uint32 | string](v T) iggcon.Identifier {
	id, _ := iggcon.NewIdentifier(v) // names are checked by Conn.Topic
	return id
}

func refIdentifier(r iggyref.Ref) iggcon.Identifier {
	if r.ByID {
		return sdkID(r.ID)
	}
	return sdkID(r.Name)
}

func (l *legacy) stream(ctx context.Context, ref iggyref.Ref) (streamInfo, bool, error) {
	var details *iggcon.StreamDetails
	err := l.do(ctx, "get stream", func() error {
		var err error
		details, err = l.cli.GetStream(refIdentifier(ref))
		return err
	})
	switch {
	case errors.Is(err, ierror.ErrStreamIdNotFound):
		return streamInfo{}, false, nil
	case err != nil:
		return streamInfo{}, false, err
	}
	return streamInfo{id: details.Id, name: details.Name}, true, nil
}

func (l *legacy) topic(ctx context.Context, streamID uint32, ref iggyref.Ref) (topicInfo, bool, error) {
	var details *iggcon.TopicDetails
	err := l.do(ctx, "get topic", func() error {
		var err error
		details, err = l.cli.GetTopic(sdkID(streamID), refIdentifier(ref))
		return err
	})
	switch {
	case errors.Is(err, ierror.ErrTopicIdNotFound) || errors.Is(err, ierror.ErrStreamIdNotFound):
		return topicInfo{}, false, nil
	case err != nil:
		return topicInfo{}, false, err
	}
	info := topicInfo{id: details.Id, name: details.Name}
	for _, p := range details.Partitions {
		info.partitions = append(info.partitions, PartitionInfo{ID: p.Id, MessagesCount: p.MessagesCount, CurrentOffset: p.CurrentOffset, CreatedAt: p.CreatedAt})
	}
	return info, true, nil
}

func (l *legacy) join(ctx context.Context, t *Topic) error {
	err := l.do(ctx, "create consumer group", func() error {
		_, err := l.cli.CreateConsumerGroup(sdkID(t.StreamID), sdkID(t.TopicID), t.Group)
		return err
	})
	if err != nil && !errors.Is(err, ierror.ErrConsumerGroupNameAlreadyExists) {
		return fmt.Errorf("create it: %w", err)
	}
	return l.do(ctx, "join consumer group", func() error {
		return l.cli.JoinConsumerGroup(sdkID(t.StreamID), sdkID(t.TopicID), sdkID(t.Group))
	})
}

func (l *legacy) leave(ctx context.Context, t *Topic) error {
	err := l.do(ctx, "leave consumer group", func() error {
		return l.cli.LeaveConsumerGroup(sdkID(t.StreamID), sdkID(t.TopicID), sdkID(t.Group))
	})
	if errors.Is(err, ierror.ErrConsumerGroupMemberNotFound) {
		return nil
	}
	return err
}

func (l *legacy) members(ctx context.Context, t *Topic) ([]Member, bool, error) {
	var out []Member
	err := l.do(ctx, "get consumer group", func() error {
		g, err := l.cli.GetConsumerGroup(sdkID(t.StreamID), sdkID(t.TopicID), sdkID(t.Group))
		if err != nil {
			return err
		}
		out = make([]Member, 0, len(g.Members))
		for _, m := range g.Members {
			out = append(out, Member{ID: m.ID, Partitions: slices.Clone(m.Partitions)})
		}
		return nil
	})
	if errors.Is(err, ierror.ErrConsumerGroupIdNotFound) {
		return nil, false, nil
	}
	return out, err == nil, err
}

// owns polls the newest message: a partition another member owns answers
// nothing, an owned one that message.
func (l *legacy) owns(ctx context.Context, t *Topic, p uint32, newest uint64) (bool, error) {
	msgs, owned, err := l.poll(ctx, t, p, newest, 1, nil, nil)
	if errors.Is(err, ErrNotOwner) {
		return false, nil
	}
	return owned && len(msgs) > 0, err
}

func groupConsumer(t *Topic) iggcon.Consumer { return iggcon.NewGroupConsumer(sdkID(t.Group)) }

// poll copies messages out of the SDK's reply buffer into one fresh arena.
// A poll on a partition this member does not own answers an empty header
// (partition 0, offset 0, no messages), exactly like an empty partition 0;
// owned is false whenever the reply does not name partition p or carries
// nothing.
func (l *legacy) poll(ctx context.Context, t *Topic, p uint32, offset uint64, count uint32, dst []batch.Message, _ *[]byte) ([]batch.Message, bool, error) {
	var polled *iggcon.PolledMessage
	part := p
	err := l.do(ctx, "poll messages", func() error {
		var err error
		polled, err = l.cli.PollMessages(sdkID(t.StreamID), sdkID(t.TopicID), groupConsumer(t), iggcon.OffsetPollingStrategy(offset), count, false, &part)
		return err
	})
	if err != nil {
		if errors.Is(err, ierror.ErrConsumerGroupMemberNotFound) {
			return dst, false, fmt.Errorf("%w: %w", ErrNotOwner, err)
		}
		return dst, false, err
	}
	if polled == nil || len(polled.Messages) == 0 {
		return dst, polled != nil && polled.PartitionId == p && (p != 0 || polled.CurrentOffset != 0), nil
	}
	if polled.PartitionId != p {
		return dst, false, nil
	}
	size := 0
	for i := range polled.Messages {
		size += len(polled.Messages[i].Payload) + len(polled.Messages[i].UserHeaders)
	}
	arena := make([]byte, 0, size)
	for i := range polled.Messages {
		m := &polled.Messages[i]
		start := len(arena)
		arena = append(arena, m.Payload...)
		payload := arena[start:len(arena):len(arena)]
		var headers []byte
		if len(m.UserHeaders) > 0 {
			start = len(arena)
			arena = append(arena, m.UserHeaders...)
			headers = arena[start:len(arena):len(arena)]
		}
		dst = append(dst, batch.Message{Offset: m.Header.Offset, Timestamp: m.Header.Timestamp, Headers: headers, Payload: payload,
			ID: [16]byte(m.Header.Id), OriginTimestamp: m.Header.OriginTimestamp})
	}
	return dst, true, nil
}

func (l *legacy) storedOffset(ctx context.Context, t *Topic, p uint32) (uint64, bool, error) {
	var info *iggcon.ConsumerOffsetInfo
	part := p
	err := l.do(ctx, "get consumer offset", func() error {
		var err error
		info, err = l.cli.GetConsumerOffset(groupConsumer(t), sdkID(t.StreamID), sdkID(t.TopicID), &part)
		return err
	})
	if err != nil || info == nil {
		return 0, false, err
	}
	return info.StoredOffset, true, nil
}

func (l *legacy) storeOffset(ctx context.Context, t *Topic, p uint32, offset uint64) error {
	part := p
	err := l.do(ctx, "store consumer offset", func() error {
		return l.cli.StoreConsumerOffset(groupConsumer(t), sdkID(t.StreamID), sdkID(t.TopicID), offset, &part)
	})
	if err == nil {
		return nil
	}
	var ie ierror.IggyError
	notOwner := errors.Is(err, ierror.ErrConsumerGroupMemberNotFound)
	if !notOwner && errors.As(err, &ie) && ie.Code() == ierror.ErrError.Code() {
		// SDK v0.8.0 turns NotResolvedConsumer (3022: the partition is not
		// this member's) into a generic error; a poll of the stored offset,
		// which exists, tells whether that is what happened.
		msgs, owned, perr := l.poll(ctx, t, p, offset, 1, nil, nil)
		notOwner = errors.Is(perr, ErrNotOwner) || perr == nil && (!owned || len(msgs) == 0)
	}
	if notOwner {
		return fmt.Errorf("%w: %w", ErrNotOwner, err)
	}
	return err
}
