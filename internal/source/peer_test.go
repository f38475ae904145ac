package source

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// TestNotIggyAtAddress: something accepts the TCP connection and closes it
// (a proxy, a firewall, another service): the error names the address and
// what happened, not the SDK's bare "error", with either client.
func TestNotIggyAtAddress(t *testing.T) {
	for _, proto := range []struct{ protocol, server string }{
		{Protocol08, "Iggy 0.8 server"}, {ProtocolAuto, "Iggy server (0.8, 0.9 or 0.10)"}, {Protocol09, "Iggy 0.9 server"},
	} {
		t.Run(proto.protocol, func(t *testing.T) { notIggyAtAddress(t, proto.protocol, proto.server) })
	}
}

func notIggyAtAddress(t *testing.T, protocol, server string) {
	for _, tc := range []struct {
		name  string
		serve func(c net.Conn)
		want  string
	}{
		{"closes at once", func(c net.Conn) { c.Close() }, "before answering"},
		{"reads then closes", func(c net.Conn) { c.Read(make([]byte, 64)); c.Close() }, "before answering"},
		{"resets", func(c net.Conn) {
			c.Read(make([]byte, 64))
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}, "before answering"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					go tc.serve(c)
				}
			}()
			_, err = Open(context.Background(), Config{Address: ln.Addr().String(), Username: "iggy", Password: "iggy", ConnectTimeout: 3 * time.Second, Protocol: protocol})
			if err == nil {
				t.Fatal("Open succeeded against a server that is not Iggy")
			}
			msg := err.Error()
			for _, want := range []string{ln.Addr().String(), "login", tc.want, server} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if strings.HasSuffix(msg, ": error") || !errors.Is(err, ErrConnectionLost) {
				t.Errorf("error %q: want ErrConnectionLost and no bare SDK \"error\"", msg)
			}
		})
	}
}
