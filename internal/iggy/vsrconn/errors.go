package vsrconn

import (
	"errors"
	"fmt"
	"slices"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

// Errors a call can wrap; check with errors.Is.
var (
	// ErrUnreachable: the server could not be reached (dial or TLS).
	ErrUnreachable = errors.New("iggy unreachable")
	// ErrConnectionLost: the connection broke, was evicted, or was cut by
	// a deadline; every later call fails too.
	ErrConnectionLost = errors.New("iggy connection lost")
	// ErrTimeout: no reply within the request timeout.
	ErrTimeout = errors.New("iggy request timed out")
	// ErrMalformedReply: a reply that does not follow the protocol.
	ErrMalformedReply = errors.New("malformed reply from the Iggy server")
	// ErrEvicted: the server ended the session (see EvictedError).
	ErrEvicted = errors.New("evicted by the Iggy server")
	// ErrProtocolMismatch: the server speaks another Iggy protocol than
	// the one configured (see ProtocolError).
	ErrProtocolMismatch = errors.New("the Iggy server speaks another protocol")
	// ErrRouteRefused: a partition's primary is a node the cluster
	// metadata does not list; the client never dials it.
	ErrRouteRefused = errors.New("partition route to an unknown node refused")
	// ErrLoginRefused: the server refused the credentials (a wrong user
	// name, password or token, an inactive user). The error names which
	// identity, never its secret; the caller knows which settings hold it.
	ErrLoginRefused = errors.New("the Iggy server refused the login")
)

// Iggy error codes (protocol 0.11/0.12, and 0.8's) that refuse a login's
// credentials rather than its form: unauthenticated, unauthorized, invalid
// credentials, invalid username, invalid password, user inactive, invalid
// personal access token, expired personal access token.
var refusedLoginCodes = []uint32{40, 41, 42, 43, 44, 47, 53, 54}

// RefusesLogin reports whether an Iggy error code refuses a login's
// credentials.
func RefusesLogin(code uint32) bool { return slices.Contains(refusedLoginCodes, code) }

// refusesLogin reports whether an eviction ends a login for its
// credentials.
func refusesLogin(r vsr.EvictionReason) bool {
	return r == vsr.EvictInvalidCredentials || r == vsr.EvictInvalidToken || r == vsr.EvictUserInactive
}

// EvictedError is an eviction frame: the session is over.
type EvictedError struct {
	Eviction vsr.Eviction
	Address  string
	// Dialect is what this client spoke.
	Dialect vsr.Dialect
}

func (e *EvictedError) Error() string {
	ev := e.Eviction
	if ev.Reason == vsr.EvictIncompatibleProtocol {
		return fmt.Sprintf("%s: the server at %s accepts binary protocol %s (%s); this client spoke %s",
			ErrEvicted, e.Address, window(ev.ServerMin, ev.ServerMax), releaseOf(ev.ServerMax), e.Dialect.Version())
	}
	return fmt.Sprintf("%s: %s (eviction reason %d)", ErrEvicted, ev.Reason, uint8(ev.Reason))
}

func (e *EvictedError) Unwrap() []error {
	if refusesLogin(e.Eviction.Reason) {
		return []error{ErrEvicted, ErrConnectionLost, ErrLoginRefused}
	}
	return []error{ErrEvicted, ErrConnectionLost}
}

// LegacyServerError says the peer answered in Iggy 0.8's framing.
type LegacyServerError struct{ Address string }

func (e *LegacyServerError) Error() string {
	return fmt.Sprintf("the server at %s answered in the legacy framing of Iggy 0.8 (status 3, invalid command)", e.Address)
}

func (e *LegacyServerError) Unwrap() error { return ErrConnectionLost }

// ProtocolError says which protocol the configuration asked for and which
// the server speaks.
type ProtocolError struct {
	Address string
	// Configured is the Iggy release the configuration names ("0.9").
	Configured string
	// Server is the release the server turned out to speak ("0.10"), and
	// Detail how it said so.
	Server string
	Detail string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("%s: iggy.protocol (IGGY_PROTOCOL) is %s but the server at %s speaks Iggy %s (%s); set iggy.protocol to %s or auto",
		ErrProtocolMismatch, e.Configured, e.Address, e.Server, e.Detail, e.Server)
}

func (e *ProtocolError) Unwrap() error { return ErrProtocolMismatch }

func window(lo, hi vsr.Version) string {
	if lo == hi {
		return lo.String()
	}
	return fmt.Sprintf("[%s, %s]", lo, hi)
}

// releaseOf names the Iggy release that speaks protocol v.
func releaseOf(v vsr.Version) string {
	if d, ok := vsr.DialectOf(v); ok {
		return "Iggy " + d.Server()
	}
	return "an Iggy release this client does not know"
}
