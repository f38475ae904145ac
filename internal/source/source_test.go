package source

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
)

func TestMain(m *testing.M) {
	log.SetOutput(io.Discard) // the SDK's login chatter
	os.Exit(m.Run())
}

// openTopic opens a connection with cfg, looks up app/logs for group "g"
// and, with join, joins the group; the connection closes with the test.
func openTopic(t testing.TB, cfg Config, join bool) (*Conn, *Topic) {
	t.Helper()
	ctx := context.Background()
	c, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tp, err := c.Topic(ctx, "app", "logs", "g")
	if err != nil {
		t.Fatal(err)
	}
	if join {
		if err := c.Join(ctx, tp); err != nil {
			t.Fatal(err)
		}
	}
	return c, tp
}

func startBroker(t testing.TB, opts ...iggytest.Option) *iggytest.Broker {
	t.Helper()
	b, err := iggytest.Start(append(opts, iggytest.WithLogger(slog.New(slog.DiscardHandler)))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestLoginAndTopic(t *testing.T) {
	b := startBroker(t, iggytest.WithUser("reader", "pw-one"), iggytest.WithToken("tok-xyz"))
	if err := b.Seed("app", "logs", 3, 30); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, cfg := range []Config{
		{Address: b.Addr(), Username: "reader", Password: "pw-one"},
		{Address: b.Addr(), Token: "tok-xyz"},
	} {
		c, err := Open(ctx, cfg)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		tp, err := c.Topic(ctx, "app", "logs", "g")
		if err != nil || len(tp.Partitions) != 3 || tp.Partitions[0].MessagesCount != 10 {
			t.Fatalf("topic: %+v, %v", tp, err)
		}
		c.Close()
	}

	_, err := Open(ctx, Config{Address: b.Addr(), Username: "reader", Password: "wrong-pw-77"})
	if err == nil || !strings.Contains(err.Error(), `"reader"`) || strings.Contains(err.Error(), "wrong-pw-77") {
		t.Fatalf("bad password: %v (must name the user, never the password)", err)
	}
	_, err = Open(ctx, Config{Address: b.Addr(), Token: "nope-tok-88"})
	if err == nil || strings.Contains(err.Error(), "nope-tok-88") {
		t.Fatalf("bad token: %v (must fail without quoting the token)", err)
	}
}

func TestMissingStreamOrTopicIsNamed(t *testing.T) {
	b := startBroker(t)
	if err := b.Seed("app", "logs", 1, 1); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := Open(ctx, Config{Address: b.Addr(), Username: "iggy", Password: "iggy"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct{ stream, topic, want string }{
		{"nope", "logs", `stream "nope"`},
		{"app", "nope", `topic "nope" in stream "app"`},
	} {
		_, err := c.Topic(ctx, tc.stream, tc.topic, "g")
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("Topic(%s, %s) = %v, want ErrNotFound naming %s", tc.stream, tc.topic, err, tc.want)
		}
	}
}

// TestDeadlineCutsStuckCall: SDK v0.8.0 has no timeouts; a call that
// outlives its context must return, and the connection is then unusable.
func TestDeadlineCutsStuckCall(t *testing.T) {
	b := startBroker(t)
	if err := b.Seed("app", "logs", 1, 5); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, tp := openTopic(t, Config{Address: b.Addr(), Username: "iggy", Password: "iggy"}, false)
	b.DelayReplies(5 * time.Second)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := c.StoredOffset(short, tp, 0)
	if !errors.Is(err, ErrConnectionLost) || time.Since(start) > 2*time.Second {
		t.Fatalf("stuck call returned %v after %s; want ErrConnectionLost within the deadline", err, time.Since(start))
	}
	if !c.Lost() {
		t.Fatal("connection not marked lost")
	}
	b.DelayReplies(0)
	if _, _, err := c.StoredOffset(ctx, tp, 0); !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("call after the cut: %v, want ErrConnectionLost", err)
	}
}

func TestUnreachable(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err := Open(context.Background(), Config{Address: addr, ConnectTimeout: time.Second})
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Open(closed port) = %v, want ErrUnreachable naming %s", err, addr)
	}
}

func TestTLS(t *testing.T) {
	caFile, serverCfg := selfSigned(t)
	b := startBroker(t, iggytest.WithTLS(serverCfg))
	if err := b.Seed("app", "logs", 1, 1); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := Open(ctx, Config{Address: b.Addr(), Username: "iggy", Password: "iggy", TLS: true, TLSCAFile: caFile})
	if err != nil {
		t.Fatalf("TLS with the right CA: %v", err)
	}
	if _, err := c.Topic(ctx, "app", "logs", "g"); err != nil {
		t.Fatal(err)
	}
	c.Close()

	start := time.Now()
	_, err = Open(ctx, Config{Address: b.Addr(), TLS: true, TLSCAFile: caFile, TLSDomain: "other.example", ConnectTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "other.example") || time.Since(start) > 3*time.Second {
		t.Fatalf("wrong server name: %v after %s; want a prompt TLS error naming it", err, time.Since(start))
	}
	_, err = Open(ctx, Config{Address: b.Addr(), TLS: true, ConnectTimeout: 2 * time.Second})
	if err == nil {
		t.Fatal("an untrusted certificate was accepted")
	}
	_, err = Open(ctx, Config{Address: b.Addr(), TLS: true, TLSCAFile: filepath.Join(t.TempDir(), "missing.pem")})
	if err == nil || !strings.Contains(err.Error(), "tls_ca_file") {
		t.Fatalf("missing CA file: %v", err)
	}
}

// selfSigned makes a CA-signed certificate for 127.0.0.1 and returns the CA
// file and the server's TLS configuration.
func selfSigned(t *testing.T) (string, *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "iggy test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}
