package drain_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iggy/foreign/go/client"
	"github.com/apache/iggy/foreign/go/client/tcp"
	iggcon "github.com/apache/iggy/foreign/go/contracts"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggytest"
)

// iggyAdmin is what the tests need of Iggy besides the sink itself: the
// in-repo broker, or — when IGGY_TEST_ADDRESS is set — a real server.
type iggyAdmin interface {
	Addr() string
	CreateStream(name string) (uint32, error)
	CreateTopic(stream, topic string, partitions int) (uint32, error)
	Append(stream, topic string, partition uint32, payload, headers []byte) (uint64, error)
	GroupOffset(stream, topic, group string, partition uint32) (uint64, bool)
	DeleteTopic(stream, topic string) error
}

var _ iggyAdmin = (*iggytest.Broker)(nil)

// remoteIggy drives a real Iggy 0.8 server through the Go SDK.
type remoteIggy struct {
	addr string
	mu   sync.Mutex
	cli  iggcon.Client
	// next is the next offset of each partition the tests created.
	next map[string]uint64
}

// realServer returns the server named by IGGY_TEST_ADDRESS (with
// IGGY_TEST_USERNAME / IGGY_TEST_PASSWORD, default iggy/iggy), or nil.
func realServer(t testing.TB) (admin *remoteIggy, user, password string) {
	addr := os.Getenv("IGGY_TEST_ADDRESS")
	if addr == "" {
		return nil, "", ""
	}
	user, password = envOr("IGGY_TEST_USERNAME", "iggy"), envOr("IGGY_TEST_PASSWORD", "iggy")
	// NewIggyClient never returns on an unreachable address: dial first.
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("IGGY_TEST_ADDRESS %s: %v", addr, err)
	}
	c.Close()
	cli, err := client.NewIggyClient(client.WithTcp(tcp.WithServerAddress(addr)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.LoginUser(user, password); err != nil {
		t.Fatalf("login to %s as %q: %v", addr, user, err)
	}
	t.Cleanup(func() { cli.Close() })
	return &remoteIggy{addr: addr, cli: cli, next: map[string]uint64{}}, user, password
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// uniqueName keeps runs against one long-lived server apart.
func uniqueName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

func (r *remoteIggy) Addr() string { return r.addr }

func (r *remoteIggy) CreateStream(name string) (uint32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := r.cli.CreateStream(name)
	if err != nil {
		return 0, err
	}
	return s.Id, nil
}

func (r *remoteIggy) CreateTopic(stream, topic string, partitions int) (uint32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sid, _ := iggcon.NewIdentifier(stream)
	t, err := r.cli.CreateTopic(sid, topic, uint32(partitions), iggcon.CompressionAlgorithmNone, iggcon.IggyExpiryNeverExpire, 0, nil)
	if err != nil {
		return 0, err
	}
	return t.Id, nil
}

func (r *remoteIggy) Append(stream, topic string, partition uint32, payload, headers []byte) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, err := iggcon.NewIggyMessage(payload)
	if err != nil {
		return 0, err
	}
	m.UserHeaders = headers
	m.Header.UserHeaderLength = uint32(len(headers))
	sid, _ := iggcon.NewIdentifier(stream)
	tid, _ := iggcon.NewIdentifier(topic)
	if err := r.cli.SendMessages(sid, tid, iggcon.PartitionId(partition), []iggcon.IggyMessage{m}); err != nil {
		return 0, err
	}
	k := fmt.Sprintf("%s/%s/%d", stream, topic, partition)
	off := r.next[k]
	r.next[k] = off + 1
	return off, nil
}

func (r *remoteIggy) DeleteTopic(stream, topic string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	sid, _ := iggcon.NewIdentifier(stream)
	tid, _ := iggcon.NewIdentifier(topic)
	prefix := fmt.Sprintf("%s/%s/", stream, topic)
	for k := range r.next {
		if strings.HasPrefix(k, prefix) {
			delete(r.next, k)
		}
	}
	return r.cli.DeleteTopic(sid, tid)
}

func (r *remoteIggy) GroupOffset(stream, topic, group string, partition uint32) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sid, _ := iggcon.NewIdentifier(stream)
	tid, _ := iggcon.NewIdentifier(topic)
	gid, _ := iggcon.NewIdentifier(group)
	p := partition
	info, err := r.cli.GetConsumerOffset(iggcon.NewGroupConsumer(gid), sid, tid, &p)
	if err != nil || info == nil {
		return 0, false
	}
	return info.StoredOffset, true
}
