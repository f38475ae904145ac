package iggytest_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/iggy/foreign/go/client/tcp"
	iggcon "github.com/apache/iggy/foreign/go/contracts"
	ierror "github.com/apache/iggy/foreign/go/errors"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
)

func TestHookFailCommand(t *testing.T) {
	tg := newTarget(t)
	br := tg.hooks(t)
	c := tg.login(t)
	f := newTopic(t, c, 1)
	send(t, c, f, iggcon.PartitionId(0), "x")
	consumer := iggcon.NewSingleConsumer(id(t, uint32(1)))
	br.FailCommand(iggytest.CodePollMessages, iggytest.StatusGroupMemberNotFound, 2)
	for range 2 {
		_, err := c.PollMessages(f.streamID, f.topicID, consumer, iggcon.FirstPollingStrategy(), 1, false, ptr(uint32(0)))
		wantErr(t, "injected failure", err, ierror.ErrConsumerGroupMemberNotFound)
	}
	pm, err := c.PollMessages(f.streamID, f.topicID, consumer, iggcon.FirstPollingStrategy(), 1, false, ptr(uint32(0)))
	if err != nil || len(pm.Messages) != 1 {
		t.Fatalf("third poll = %+v, %v; want the message", pm, err)
	}
	if err := c.Ping(); err != nil {
		t.Fatalf("other commands must be unaffected: %v", err)
	}
}

func TestHookCloseOnCommandDropsRequest(t *testing.T) {
	tg := newTarget(t)
	br := tg.hooks(t)
	c := tg.login(t)
	f := newTopic(t, c, 1)
	send(t, c, f, iggcon.PartitionId(0), "a", "b")
	consumer := iggcon.NewSingleConsumer(id(t, uint32(1)))
	br.CloseOnCommand(iggytest.CodeStoreConsumerOffset, 1)
	if err := c.StoreConsumerOffset(consumer, f.streamID, f.topicID, 1, ptr(uint32(0))); err == nil {
		t.Fatal("store on a closed connection succeeded")
	}
	eventually(t, "the connection to close", func() bool { return br.Connections() == 0 })
	c2 := tg.login(t)
	off, err := c2.GetConsumerOffset(consumer, f.streamID, f.topicID, ptr(uint32(0)))
	if err != nil || off != nil {
		t.Fatalf("offset after dropped store = %+v, %v; want nothing stored", off, err)
	}
	if err := c2.StoreConsumerOffset(consumer, f.streamID, f.topicID, 1, ptr(uint32(0))); err != nil {
		t.Fatalf("hook must fire only once: %v", err)
	}
}

func TestHookCloseAfterCommandExecutesRequest(t *testing.T) {
	tg := newTarget(t)
	br := tg.hooks(t)
	c := tg.login(t)
	f := newTopic(t, c, 1)
	send(t, c, f, iggcon.PartitionId(0), "a", "b")
	consumer := iggcon.NewSingleConsumer(id(t, uint32(1)))
	br.CloseAfterCommand(iggytest.CodeStoreConsumerOffset, 1)
	if err := c.StoreConsumerOffset(consumer, f.streamID, f.topicID, 1, ptr(uint32(0))); err == nil {
		t.Fatal("store answered although the reply should be lost")
	}
	c2 := tg.login(t)
	off, err := c2.GetConsumerOffset(consumer, f.streamID, f.topicID, ptr(uint32(0)))
	if err != nil || off == nil || off.StoredOffset != 1 {
		t.Fatalf("offset after lost reply = %+v, %v; want 1 stored", off, err)
	}
}

func TestHookCloseAfterRequests(t *testing.T) {
	tg := newTarget(t)
	br := tg.hooks(t)
	early := tg.login(t) // accepted before the hook: unaffected
	br.CloseAfter(3)
	c := tg.dial(t)
	if _, err := c.LoginUser("iggy", "iggy"); err != nil { // login + cluster metadata = 2 requests
		t.Fatal(err)
	}
	if err := c.Ping(); err != nil {
		t.Fatalf("third request: %v", err)
	}
	if err := c.Ping(); err == nil {
		t.Fatal("fourth request succeeded, want a closed connection")
	}
	br.CloseAfter(0)
	for range 5 {
		if err := early.Ping(); err != nil {
			t.Fatalf("connection accepted before CloseAfter was closed: %v", err)
		}
	}
}

func TestHookDelayReplies(t *testing.T) {
	tg := newTarget(t)
	br := tg.hooks(t)
	c := tg.login(t)
	br.DelayReplies(150 * time.Millisecond)
	start := time.Now()
	if err := c.Ping(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("reply came after %v, want at least the 150ms delay", d)
	}
	br.DelayReplies(0)
}

func TestConnectionsAndCloseWithDelayedReply(t *testing.T) {
	tg := newTarget(t)
	br := tg.hooks(t)
	a := tg.login(t)
	b := tg.login(t)
	// dial's reachability probe connections go away asynchronously.
	eventually(t, "two connections", func() bool { return br.Connections() == 2 })
	_ = a.Close()
	eventually(t, "one connection", func() bool { return br.Connections() == 1 })
	_ = b.Close()
	eventually(t, "no connections", func() bool { return br.Connections() == 0 })

	// Close must not wait for a long reply delay.
	c := tg.login(t)
	br.DelayReplies(time.Hour)
	done := make(chan error, 1)
	go func() { done <- c.Ping() }()
	eventually(t, "the ping to be in flight", func() bool { return br.Connections() == 1 })
	time.Sleep(20 * time.Millisecond)
	if err := br.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := <-done; err == nil {
		t.Fatal("ping answered by a closed broker")
	}
	if n := br.Connections(); n != 0 {
		t.Fatalf("Connections after Close = %d", n)
	}
}

func TestAdminHelpers(t *testing.T) {
	tg := newTarget(t)
	br := tg.hooks(t)
	sid, err := br.CreateStream("s")
	if err != nil || sid != 0 {
		t.Fatalf("CreateStream = %d, %v", sid, err)
	}
	if _, err := br.CreateStream("s"); err == nil {
		t.Fatal("duplicate CreateStream succeeded")
	}
	tid, err := br.CreateTopic("s", "t", 2)
	if err != nil || tid != 0 {
		t.Fatalf("CreateTopic = %d, %v", tid, err)
	}
	var se *iggytest.StatusError
	if _, err := br.CreateTopic("nope", "t", 2); !errors.As(err, &se) || se.Status != iggytest.StatusStreamNotFound {
		t.Fatalf("CreateTopic in a missing stream = %v, want status 1009", err)
	}
	if n, err := br.PartitionCount("s", "t"); err != nil || n != 2 {
		t.Fatalf("PartitionCount = %d, %v", n, err)
	}
	if _, err := br.PartitionCount("s", "nope"); !errors.Is(err, iggytest.ErrNotFound) {
		t.Fatalf("PartitionCount of a missing topic = %v, want ErrNotFound", err)
	}
	if _, ok := br.HighOffset("s", "t", 1); ok {
		t.Fatal("HighOffset of an empty partition reported ok")
	}
	headers := iggytest.SampleHeaders(7)
	for i := range 10 {
		off, err := br.Append("s", "t", 1, []byte{byte('a' + i)}, headers)
		if err != nil || off != uint64(i) {
			t.Fatalf("Append %d = %d, %v", i, off, err)
		}
	}
	if _, err := br.Append("s", "t", 5, []byte("x"), nil); !errors.Is(err, iggytest.ErrNotFound) {
		t.Fatalf("Append to a missing partition = %v", err)
	}
	if off, ok := br.HighOffset("s", "t", 1); !ok || off != 9 {
		t.Fatalf("HighOffset = %d, %v", off, ok)
	}
	if err := br.DeleteBelow("s", "t", 1, 4); err != nil {
		t.Fatal(err)
	}
	c := tg.login(t)
	f := topicFixture{streamID: id(t, "s"), topicID: id(t, "t")}
	consumer := iggcon.NewSingleConsumer(id(t, uint32(1)))
	for _, strategy := range []iggcon.PollingStrategy{iggcon.OffsetPollingStrategy(0), iggcon.FirstPollingStrategy(), iggcon.NextPollingStrategy()} {
		pm, err := c.PollMessages(f.streamID, f.topicID, consumer, strategy, 3, false, ptr(uint32(1)))
		if err != nil || !slices.Equal(offsets(pm), []uint64{4, 5, 6}) || pm.CurrentOffset != 9 {
			t.Fatalf("poll %+v after DeleteBelow(4) = %v, %v", strategy, offsets(pm), err)
		}
		h, err := iggcon.DeserializeHeaders(pm.Messages[0].UserHeaders)
		if err != nil || len(h) != 3 {
			t.Fatalf("appended headers = %+v, %v", h, err)
		}
	}
	if _, err := c.CreateConsumerGroup(f.streamID, f.topicID, "g"); err != nil {
		t.Fatal(err)
	}
	if err := c.JoinConsumerGroup(f.streamID, f.topicID, id(t, "g")); err != nil {
		t.Fatal(err)
	}
	if _, ok := br.GroupOffset("s", "t", "g", 1); ok {
		t.Fatal("GroupOffset before any commit reported ok")
	}
	if err := c.StoreConsumerOffset(iggcon.NewGroupConsumer(id(t, "g")), f.streamID, f.topicID, 6, ptr(uint32(1))); err != nil {
		t.Fatal(err)
	}
	if off, ok := br.GroupOffset("s", "t", "g", 1); !ok || off != 6 {
		t.Fatalf("GroupOffset = %d, %v", off, ok)
	}
}

func TestTLS(t *testing.T) {
	if os.Getenv("IGGY_TEST_ADDRESS") != "" {
		t.Skip("needs the in-process broker to serve a generated certificate")
	}
	cert, caFile := selfSigned(t)
	tg := newTarget(t, iggytest.WithTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	c := tg.dial(t, tcp.WithTLS(tcp.WithTLSCAFile(caFile), tcp.WithTLSDomain("localhost")))
	if _, err := c.LoginUser("iggy", "iggy"); err != nil {
		t.Fatalf("login over TLS: %v", err)
	}
	if _, err := c.CreateStream("over-tls"); err != nil {
		t.Fatalf("create stream over TLS: %v", err)
	}
	plain, err := net.DialTimeout("tcp", tg.addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	_ = plain.SetDeadline(time.Now().Add(2 * time.Second))
	_, _ = plain.Write([]byte{4, 0, 0, 0, 1, 0, 0, 0}) // a cleartext ping
	buf := make([]byte, 8)
	if n, err := plain.Read(buf); err == nil && n == 8 && buf[0] == 0 && buf[4] == 0 {
		t.Fatal("TLS broker answered a cleartext ping")
	}
}

func selfSigned(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "iggytest"},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, caFile
}

// Restart keeps messages and stored offsets, drops every connection (and
// so every group membership), and stamps new creation times, as a 0.8.0
// server restart does.
func TestRestart(t *testing.T) {
	tg := newTarget(t)
	br := tg.hooks(t)
	if _, err := br.CreateStream("s"); err != nil {
		t.Fatal(err)
	}
	if _, err := br.CreateTopic("s", "t", 1); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := br.Append("s", "t", 0, []byte{byte('a' + i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	c := tg.login(t)
	f := topicFixture{streamID: id(t, "s"), topicID: id(t, "t")}
	if _, err := c.CreateConsumerGroup(f.streamID, f.topicID, "g"); err != nil {
		t.Fatal(err)
	}
	if err := c.JoinConsumerGroup(f.streamID, f.topicID, id(t, "g")); err != nil {
		t.Fatal(err)
	}
	if err := c.StoreConsumerOffset(iggcon.NewGroupConsumer(id(t, "g")), f.streamID, f.topicID, 3, ptr(uint32(0))); err != nil {
		t.Fatal(err)
	}
	before, err := c.GetTopic(f.streamID, f.topicID)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	if n := br.Restart(); n < 1 {
		t.Fatalf("Restart dropped %d connections, want the client's", n)
	}
	if err := c.Ping(); err == nil {
		t.Fatal("a connection from before the restart still answers")
	}
	c = tg.login(t)
	after, err := c.GetTopic(f.streamID, f.topicID)
	if err != nil {
		t.Fatal(err)
	}
	if after.CreatedAt == before.CreatedAt || after.Partitions[0].CreatedAt == before.Partitions[0].CreatedAt {
		t.Fatalf("creation times %d/%d before and %d/%d after the restart; want new ones", before.CreatedAt, before.Partitions[0].CreatedAt, after.CreatedAt, after.Partitions[0].CreatedAt)
	}
	if off, ok := br.GroupOffset("s", "t", "g", 0); !ok || off != 3 {
		t.Fatalf("group offset after the restart = %d, %v; want 3", off, ok)
	}
	if off, err := c.GetConsumerOffset(iggcon.NewGroupConsumer(id(t, "g")), f.streamID, f.topicID, ptr(uint32(0))); err != nil || off == nil || off.StoredOffset != 3 {
		t.Fatalf("group offset read by a client after the restart = %+v, %v; want 3", off, err)
	}
	if off, ok := br.HighOffset("s", "t", 0); !ok || off != 4 {
		t.Fatalf("high offset after the restart = %d, %v; want 4", off, ok)
	}
	g, err := c.GetConsumerGroup(f.streamID, f.topicID, id(t, "g"))
	if err != nil || g.MembersCount != 0 {
		t.Fatalf("group after the restart: %+v, %v; want no members", g, err)
	}
}
