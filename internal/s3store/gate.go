package s3store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// A Gate holds uploads back until the caller may let them land: a
// single PutObject sends all of its body but the last byte and waits, so
// the upload overlaps whatever the caller must finish first (the drain
// records the object's intent), yet the store cannot take the object
// before the gate opens; a store commits a PUT only with its whole body.
// A multipart upload, a stream and an empty body wait before they start.
// A failed gate, or the call's context ending, ends a held upload with
// nothing stored. Keep the hold short: MinIO locks a key while a
// conditional PUT of it is in flight (a HeadObject of the key waits, and
// after 30 s both fail), and stores time out a body that stalls for long
// (about 20 s). The zero Gate is not usable; a Gate opens or fails once.
type Gate struct {
	done chan struct{}
	once sync.Once
	err  error
}

// NewGate returns a closed gate.
func NewGate() *Gate { return &Gate{done: make(chan struct{})} }

// Open lets the uploads held at g land.
func (g *Gate) Open() { g.settle(nil) }

// Fail ends the uploads held at g with err (which must not be nil).
func (g *Gate) Fail(err error) {
	if err == nil {
		err = errors.New("upload gate failed")
	}
	g.settle(err)
}

func (g *Gate) settle(err error) {
	g.once.Do(func() {
		g.err = err
		close(g.done)
	})
}

// Wait returns once g is open (nil) or failed (ErrGateFailed wrapping
// the cause), or ctx ends.
func (g *Gate) Wait(ctx context.Context) error {
	select {
	case <-g.done:
		return g.result()
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// failed reports whether g has failed.
func (g *Gate) failed() bool {
	select {
	case <-g.done:
		return g.err != nil
	default:
		return false
	}
}

func (g *Gate) result() error {
	if g.err != nil {
		return fmt.Errorf("%w: %w", ErrGateFailed, g.err)
	}
	return nil
}

// ErrGateFailed marks an upload ended by its Gate failing: nothing was stored.
var ErrGateFailed = errors.New("upload held back and then cancelled: nothing was stored")

// presetPayloadHash is a per-request API option that hands SigV4 the
// SHA-256 of body computed straight from the slice: the SDK's own
// ComputePayloadSHA256 would read the whole body first, through a copy,
// and a gated body cannot be read to its end before its gate opens. It
// changes nothing where the payload is not signed (UNSIGNED-PAYLOAD swapped
// in by NewClient, or HTTPS under the SDK's dynamic choice).
func presetPayloadHash(body []byte) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		m, ok := stack.Finalize.Get(payloadHashID)
		if !ok {
			return nil
		}
		var always bool
		switch m.(type) {
		case *v4.UnsignedPayload:
			return nil
		case *v4.ComputePayloadSHA256:
			always = true
		}
		return stack.Finalize.Insert(payloadHash{body: body, always: always}, payloadHashID, middleware.Before)
	}
}

// withPayloadHash is the per-request option of presetPayloadHash.
func withPayloadHash(body []byte) func(*s3.Options) {
	return func(o *s3.Options) { o.APIOptions = append(o.APIOptions, presetPayloadHash(body)) }
}

// payloadHashID is the SDK's ID of the middleware that sets the payload
// hash (ComputePayloadSHA256, UnsignedPayload or S3's dynamic choice).
const payloadHashID = "ComputePayloadHash"

// payloadHash sets the hash of body; always is false before S3's dynamic
// choice, which signs only plain-HTTP requests.
type payloadHash struct {
	body   []byte
	always bool
}

func (payloadHash) ID() string { return "PresetPayloadSHA256" }

func (p payloadHash) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	if req, ok := in.Request.(*smithyhttp.Request); ok && (p.always || !req.IsHTTPS()) && v4.GetPayloadHash(ctx) == "" {
		sum := sha256.Sum256(p.body)
		ctx = v4.SetPayloadHash(ctx, hex.EncodeToString(sum[:]))
	}
	return next.HandleFinalize(ctx, in)
}
