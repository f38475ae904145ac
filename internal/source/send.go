package source

import (
	"context"
	"errors"
	"fmt"

	iggcon "github.com/apache/iggy/foreign/go/contracts"
	ierror "github.com/apache/iggy/foreign/go/errors"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsrconn"
)

// Outgoing is one message to produce.
type Outgoing struct {
	// ID is the message's id (a u128, little endian); zero: one the
	// client (0.9/0.10) or the server (0.8) picks.
	ID [16]byte
	// OriginTimestamp is the producer's time (µs); zero: now.
	OriginTimestamp uint64
	// Headers are user headers in Iggy's wire form (batch.Message's).
	Headers []byte
	Payload []byte
}

// ErrDuplicate is a batch the server took for one it already has (0.9
// and 0.10 deduplicate a connection's requests): nothing was appended.
var ErrDuplicate = errors.New("the server reported the batch a duplicate of one it has, and appended nothing")

// ErrOriginSpan is a batch whose origin times span more than a batch can
// say (0.9/0.10: 2^32 µs, about 71 minutes): send it in parts.
var ErrOriginSpan = vsrconn.ErrOriginSpan

// ErrNotSent marks a send that failed before any of its bytes left: no
// message of it can land. Any other failed send may have landed.
var ErrNotSent = errors.New("nothing was sent")

// Send appends msgs to partition p of t, in their order, as one batch. It
// returns the offset the first landed at when the server says (0.9 and
// 0.10 confirm it, or report the batch a duplicate: ErrDuplicate; 0.8
// answers nothing, and known is false). Send needs no group membership:
// it is a producer's call.
func (c *Conn) Send(ctx context.Context, t *Topic, p uint32, msgs []Outgoing) (first uint64, known bool, err error) {
	if len(msgs) == 0 {
		return 0, false, errors.New("iggy send: no messages")
	}
	first, known, err = c.b.send(ctx, t, p, msgs)
	if errors.Is(err, ErrOriginSpan) && !errors.Is(err, ErrNotSent) {
		err = fmt.Errorf("%w (%w)", err, ErrNotSent)
	}
	if err != nil {
		return 0, false, fmt.Errorf("iggy send of %d messages to %s/%s partition %d: %w", len(msgs), t.Stream, t.Topic, p, err)
	}
	return first, known, nil
}

func (b *vsrBackend) send(ctx context.Context, t *Topic, p uint32, msgs []Outgoing) (uint64, bool, error) {
	out := make([]vsrconn.Outgoing, len(msgs))
	for i, m := range msgs {
		out[i] = vsrconn.Outgoing{Payload: m.Payload, Headers: m.Headers, ID: vsr.U128(m.ID), OriginTimestamp: m.OriginTimestamp}
	}
	pc := b.context(t, p)
	if pc != nil {
		pc.OwnerGeneration = 0 // a producer's write binds to no group owner
	}
	base, ok, err := b.c.Send(ctx, vsr.NumericID(t.StreamID), vsr.NumericID(t.TopicID), p, out, pc)
	switch {
	case err != nil:
		return 0, false, err // a producer's: the group's assignment is not its business (fenced)
	case !ok:
		return 0, false, ErrDuplicate
	}
	return base, true, nil
}

func (l *legacy) send(ctx context.Context, t *Topic, p uint32, msgs []Outgoing) (uint64, bool, error) {
	out := make([]iggcon.IggyMessage, len(msgs))
	for i, m := range msgs {
		im, err := iggcon.NewIggyMessage(m.Payload)
		if err != nil {
			return 0, false, fmt.Errorf("message %d: %w (%w)", i, err, ErrNotSent)
		}
		im.Header.Id = iggcon.MessageID(m.ID)
		if m.OriginTimestamp != 0 {
			im.Header.OriginTimestamp = m.OriginTimestamp
		}
		if len(m.Headers) > iggcon.MaxUserHeadersSize {
			return 0, false, fmt.Errorf("message %d: %w (%d bytes of user headers; %w)", i, ierror.ErrTooBigUserHeaders, len(m.Headers), ErrNotSent)
		}
		im.UserHeaders = m.Headers
		im.Header.UserHeaderLength = uint32(len(m.Headers))
		out[i] = im
	}
	err := l.do(ctx, "send messages", func() error {
		return l.cli.SendMessages(sdkID(t.StreamID), sdkID(t.TopicID), iggcon.PartitionId(p), out)
	})
	return 0, false, err
}
