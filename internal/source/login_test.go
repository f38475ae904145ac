package source

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
)

// TestLoginRefusedIsTyped: a wrong password or token is ErrLoginRefused in
// every protocol, pinned or found by auto, so that the sink can name the
// settings that hold the credentials; the error names the user, never the
// password or the token. An unreachable server is not a refusal.
func TestLoginRefusedIsTyped(t *testing.T) {
	for _, tc := range []struct{ broker, protocol string }{
		{iggytest.Protocol08, Protocol08},
		{iggytest.Protocol08, ProtocolAuto},
		{iggytest.Protocol09, Protocol09},
		{iggytest.Protocol09, ProtocolAuto},
		{iggytest.Protocol010, Protocol010},
		{iggytest.Protocol010, ProtocolAuto},
	} {
		t.Run(tc.broker+"/"+tc.protocol, func(t *testing.T) {
			b := startBroker(t, iggytest.WithProtocol(tc.broker), iggytest.WithUser("reader", "pw-one"), iggytest.WithToken("tok-xyz"))
			ctx := context.Background()
			for _, cfg := range []Config{
				{Username: "reader", Password: "wrong-pw-77"},
				{Username: "nobody", Password: "pw-one"},
				{Token: "nope-tok-88"},
			} {
				cfg.Address, cfg.Protocol = b.Addr(), tc.protocol
				_, err := Open(ctx, cfg)
				if !errors.Is(err, ErrLoginRefused) {
					t.Fatalf("%s: Open = %v, want ErrLoginRefused", who(cfg), err)
				}
				if strings.Contains(err.Error(), "wrong-pw-77") || strings.Contains(err.Error(), "nope-tok-88") {
					t.Fatalf("the refusal shows the secret: %v", err)
				}
				if !strings.Contains(err.Error(), who(cfg)) {
					t.Fatalf("the refusal %q does not name %s", err, who(cfg))
				}
			}
			c, err := Open(ctx, Config{Address: b.Addr(), Protocol: tc.protocol, Username: "reader", Password: "pw-one"})
			if err != nil {
				t.Fatalf("the right password: %v", err)
			}
			c.Close()
		})
	}
	b := startBroker(t)
	addr := b.Addr()
	b.Close()
	if _, err := Open(context.Background(), Config{Address: addr, Username: "iggy", Password: "iggy"}); err == nil || errors.Is(err, ErrLoginRefused) {
		t.Fatalf("a closed port: %v, want an error that is not ErrLoginRefused", err)
	}
}
