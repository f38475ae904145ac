// Package iggyadmin is what tests need of an Iggy server besides the sink: create and delete streams and topics,
// produce messages, read a group's offset — on the in-repo broker, or on a real server of any protocol (IGGY_TEST_ADDRESS).
package iggyadmin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/apache/iggy/foreign/go/client"
	"github.com/apache/iggy/foreign/go/client/tcp"
	iggcon "github.com/apache/iggy/foreign/go/contracts"
	ierror "github.com/apache/iggy/foreign/go/errors"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsrconn"
)

// Admin drives an Iggy server for a test. *iggytest.Broker is one.
type Admin interface {
	Addr() string
	CreateStream(name string) (uint32, error)
	CreateTopic(stream, topic string, partitions int) (uint32, error)
	// Append stores one message (user headers in wire form) and returns
	// its offset.
	Append(stream, topic string, partition uint32, payload, headers []byte) (uint64, error)
	GroupOffset(stream, topic, group string, partition uint32) (uint64, bool)
	DeleteTopic(stream, topic string) error
}

var _ Admin = (*iggytest.Broker)(nil)

// BrokerProtocol is the protocol an in-repo broker is pinned to in the
// end-to-end tests: IGGY_TEST_PROTOCOL (0.8, 0.9 or 0.10), default 0.9.
// The sink under test keeps iggy.protocol = auto, so it finds it out.
func BrokerProtocol(t testing.TB) string {
	switch p := os.Getenv("IGGY_TEST_PROTOCOL"); p {
	case "":
		return "0.9"
	case "0.8", "0.9", "0.10":
		return p
	default:
		t.Fatalf("IGGY_TEST_PROTOCOL=%q: want 0.8, 0.9 or 0.10", p)
		return ""
	}
}

// Remote is a real server named by IGGY_TEST_ADDRESS.
type Remote struct {
	Address  string
	Username string
	Password string
	// Protocol is IGGY_TEST_PROTOCOL as given ("" = auto), and Speaks what
	// the server turned out to speak: "0.8", "0.9" or "0.10".
	Protocol string
	Speaks   string

	mu  sync.Mutex
	vsr *vsrconn.Client
	sdk iggcon.Client
}

// FromEnv connects to the server IGGY_TEST_ADDRESS names (with
// IGGY_TEST_USERNAME / IGGY_TEST_PASSWORD, default iggy/iggy, and
// IGGY_TEST_PROTOCOL, default auto), or returns nil when it is unset.
func FromEnv(t testing.TB) *Remote {
	t.Helper()
	addr := os.Getenv("IGGY_TEST_ADDRESS")
	if addr == "" {
		return nil
	}
	r, err := Dial(addr, envOr("IGGY_TEST_USERNAME", "iggy"), envOr("IGGY_TEST_PASSWORD", "iggy"), os.Getenv("IGGY_TEST_PROTOCOL"))
	if err != nil {
		t.Fatalf("IGGY_TEST_ADDRESS %s: %v", addr, err)
	}
	t.Cleanup(r.Close)
	return r
}

// Dial connects to a server in protocol ("" or auto: whichever it speaks).
func Dial(addr, user, password, protocol string) (*Remote, error) {
	r := &Remote{Address: addr, Username: user, Password: password, Protocol: protocol}
	if err := r.connect(); err != nil {
		return nil, err
	}
	return r, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func (r *Remote) connect() error {
	var d vsr.Dialect
	switch r.Protocol {
	case "", "auto":
	case "0.8":
		return r.connectSDK()
	case "0.9":
		d = vsr.V011
	case "0.10":
		d = vsr.V012
	default:
		return fmt.Errorf("IGGY_TEST_PROTOCOL %q: want auto, 0.8, 0.9 or 0.10", r.Protocol)
	}
	c, err := vsrconn.Dial(context.Background(), vsrconn.Config{Address: r.Address, Username: r.Username, Password: r.Password, Dialect: d, ConnectTimeout: 15 * time.Second, RequestTimeout: 30 * time.Second})
	var legacy *vsrconn.LegacyServerError
	switch {
	case d == 0 && errors.As(err, &legacy):
		return r.connectSDK()
	case err != nil:
		return err
	}
	r.vsr, r.Speaks = c, c.Dialect().Server()
	return nil
}

func (r *Remote) connectSDK() error {
	// NewIggyClient never returns on an unreachable address: dial first.
	nc, err := net.DialTimeout("tcp", r.Address, 2*time.Second)
	if err != nil {
		return err
	}
	nc.Close()
	cli, err := client.NewIggyClient(client.WithTcp(tcp.WithServerAddress(r.Address)))
	if err != nil {
		return err
	}
	if _, err := cli.LoginUser(r.Username, r.Password); err != nil {
		cli.Close()
		return fmt.Errorf("login as %q: %w", r.Username, err)
	}
	r.sdk, r.Speaks = cli, "0.8"
	return nil
}

// Close ends the connection.
func (r *Remote) Close() {
	if r.vsr != nil {
		r.vsr.Close()
	}
	if r.sdk != nil {
		r.sdk.Close()
	}
}

// Addr is the server's address.
func (r *Remote) Addr() string { return r.Address }

// SinkProtocol is the iggy.protocol value the sink under test should
// use: IGGY_TEST_PROTOCOL when set, else auto.
func (r *Remote) SinkProtocol() string {
	if r.Protocol == "" {
		return "auto"
	}
	return r.Protocol
}

func ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// CreateStream creates a stream.
func (r *Remote) CreateStream(name string) (uint32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sdk != nil {
		s, err := r.sdk.CreateStream(name)
		if err != nil {
			return 0, err
		}
		return s.Id, nil
	}
	c, cancel := ctx()
	defer cancel()
	s, err := r.vsr.CreateStream(c, name)
	return s.ID, err
}

// EnsureTopic creates stream and topic when they are missing, and checks
// that an existing topic has partitions partitions.
func (r *Remote) EnsureTopic(stream, topic string, partitions int) error {
	if _, err := r.CreateStream(stream); err != nil && !exists(err) {
		return fmt.Errorf("create stream %s: %w", stream, err)
	}
	_, err := r.CreateTopic(stream, topic, partitions)
	if err == nil {
		return nil
	}
	if !exists(err) {
		return fmt.Errorf("create topic %s/%s: %w", stream, topic, err)
	}
	n, err := r.partitions(stream, topic)
	if err == nil && n != partitions {
		err = fmt.Errorf("topic %s/%s has %d partitions, not %d", stream, topic, n, partitions)
	}
	return err
}

// exists reports a refusal because the stream or topic exists.
func exists(err error) bool {
	return vsr.IsStatus(err, vsr.StatusStreamNameExists) || vsr.IsStatus(err, vsr.StatusTopicNameExists) ||
		errors.Is(err, ierror.ErrStreamNameAlreadyExists) || errors.Is(err, ierror.ErrTopicNameAlreadyExists)
}

func (r *Remote) partitions(stream, topic string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sdk != nil {
		t, err := r.sdk.GetTopic(sdkID(stream), sdkID(topic))
		if err != nil {
			return 0, err
		}
		return int(t.PartitionsCount), nil
	}
	c, cancel := ctx()
	defer cancel()
	t, _, err := r.vsr.GetTopic(c, vsr.NamedID(stream), vsr.NamedID(topic))
	return len(t.Partitions), err
}

// CreateTopic creates a topic with server-default settings (no options:
// servers of the 0.9 development line refuse option keys they do not know).
func (r *Remote) CreateTopic(stream, topic string, partitions int) (uint32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sdk != nil {
		t, err := r.sdk.CreateTopic(sdkID(stream), topic, uint32(partitions), iggcon.CompressionAlgorithmNone, iggcon.IggyExpiryNeverExpire, 0, nil)
		if err != nil {
			return 0, err
		}
		return t.Id, nil
	}
	c, cancel := ctx()
	defer cancel()
	t, err := r.vsr.CreateTopic(c, vsr.NamedID(stream), topic, uint32(partitions), nil)
	return t.ID, err
}

// DeleteTopic deletes a topic.
func (r *Remote) DeleteTopic(stream, topic string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sdk != nil {
		return r.sdk.DeleteTopic(sdkID(stream), sdkID(topic))
	}
	c, cancel := ctx()
	defer cancel()
	return r.vsr.DeleteTopic(c, vsr.NamedID(stream), vsr.NamedID(topic))
}

// Append sends one message and returns the offset the server gave it.
func (r *Remote) Append(stream, topic string, partition uint32, payload, headers []byte) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sdk != nil {
		return r.appendSDK(stream, topic, partition, payload, headers)
	}
	c, cancel := ctx()
	defer cancel()
	pctx, err := r.partitionContext(c, stream, topic, partition)
	if err != nil {
		return 0, err
	}
	base, ok, err := r.vsr.Send(c, vsr.NamedID(stream), vsr.NamedID(topic), partition, []vsrconn.Outgoing{{Payload: payload, Headers: headers}}, pctx)
	if err == nil && !ok {
		err = fmt.Errorf("the server confirmed no offset for partition %d", partition)
	}
	return base, err
}

func (r *Remote) appendSDK(stream, topic string, partition uint32, payload, headers []byte) (uint64, error) {
	m, err := iggcon.NewIggyMessage(payload)
	if err != nil {
		return 0, err
	}
	m.UserHeaders = headers
	m.Header.UserHeaderLength = uint32(len(headers))
	if err := r.sdk.SendMessages(sdkID(stream), sdkID(topic), iggcon.PartitionId(partition), []iggcon.IggyMessage{m}); err != nil {
		return 0, err
	}
	t, err := r.sdk.GetTopic(sdkID(stream), sdkID(topic))
	if err != nil || int(partition) >= len(t.Partitions) {
		return 0, fmt.Errorf("partition %d of %s/%s after the send: %v", partition, stream, topic, err)
	}
	return t.Partitions[partition].CurrentOffset, nil
}

// GroupOffset reads a group's stored offset (no membership needed).
func (r *Remote) GroupOffset(stream, topic, group string, partition uint32) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sdk != nil {
		p := partition
		info, err := r.sdk.GetConsumerOffset(iggcon.NewGroupConsumer(sdkID(group)), sdkID(stream), sdkID(topic), &p)
		if err != nil || info == nil {
			return 0, false
		}
		return info.StoredOffset, true
	}
	c, cancel := ctx()
	defer cancel()
	pctx, _ := r.partitionContext(c, stream, topic, partition) // without it, the server's refusal says why
	so, ok, err := r.vsr.StoredOffset(c, &vsr.Offset{Consumer: vsr.Consumer{Kind: vsr.ConsumerGroup, ID: vsr.NamedID(group)},
		Stream: vsr.NamedID(stream), Topic: vsr.NamedID(topic), Partition: vsr.PartitionID(partition)}, pctx)
	if err != nil || !ok {
		return 0, false
	}
	return so.Stored, true
}

// partitionContext is the context 0.10 partition requests carry (nil
// before 0.10).
func (r *Remote) partitionContext(c context.Context, stream, topic string, partition uint32) (*vsr.PartitionContext, error) {
	if r.vsr.Dialect() < vsr.V012 {
		return nil, nil
	}
	t, _, err := r.vsr.GetTopic(c, vsr.NamedID(stream), vsr.NamedID(topic))
	if err != nil || int(partition) >= len(t.Partitions) {
		return nil, fmt.Errorf("partition %d of %s/%s: %v", partition, stream, topic, err)
	}
	return &t.Partitions[partition].Context, nil
}

func sdkID(s string) iggcon.Identifier {
	id, _ := iggcon.NewIdentifier(s)
	return id
}

// Message is one message as a test reads it back.
type Message struct {
	Offset    uint64
	Timestamp uint64 // server time, µs
	Payload   []byte
	Headers   []byte
}

// Read reads the first n messages of a partition as a plain consumer, in
// whichever protocol the server at addr speaks (found out as the sink
// does), for what a test compares objects with.
func Read(t testing.TB, addr, user, password, stream, topic string, partition uint32, n int) []Message {
	t.Helper()
	r := &Remote{Address: addr, Username: user, Password: password}
	if err := r.connect(); err != nil {
		t.Fatalf("read %s/%s: %v", stream, topic, err)
	}
	defer r.Close()
	var out []Message
	for len(out) < n {
		msgs, err := r.poll(stream, topic, partition, uint64(len(out)))
		if err != nil {
			t.Fatalf("read %s/%s partition %d at %d: %v", stream, topic, partition, len(out), err)
		}
		if len(msgs) == 0 {
			t.Fatalf("partition %d: read %d of %d messages", partition, len(out), n)
		}
		out = append(out, msgs...)
	}
	return out[:n]
}

// readerID is the plain consumer tests read as (it stores nothing).
const readerID = 4242

func (r *Remote) poll(stream, topic string, partition uint32, offset uint64) ([]Message, error) {
	var out []Message
	if r.sdk != nil {
		p := partition
		polled, err := r.sdk.PollMessages(sdkID(stream), sdkID(topic), iggcon.NewSingleConsumer(numericSDKID(readerID)), iggcon.OffsetPollingStrategy(offset), 1000, false, &p)
		if err != nil {
			return nil, err
		}
		for _, m := range polled.Messages {
			out = append(out, Message{Offset: m.Header.Offset, Timestamp: m.Header.Timestamp, Payload: m.Payload, Headers: m.UserHeaders})
		}
		return out, nil
	}
	c, cancel := ctx()
	defer cancel()
	pctx, _ := r.partitionContext(c, stream, topic, partition) // without it, the server's refusal says why
	rep, err := r.vsr.Poll(c, &vsr.Poll{Consumer: vsr.Consumer{Kind: vsr.ConsumerSingle, ID: vsr.NumericID(readerID)}, Stream: vsr.NamedID(stream), Topic: vsr.NamedID(topic),
		Partition: vsr.PartitionID(partition), Strategy: vsr.AtOffset(offset), Count: 1000}, pctx)
	if err != nil {
		return nil, err
	}
	err = rep.Messages(true, func(m *vsr.Message) error {
		out = append(out, Message{Offset: m.Offset, Timestamp: m.Timestamp, Payload: m.Payload, Headers: m.Headers})
		return nil
	})
	return out, err
}

func numericSDKID(id uint32) iggcon.Identifier {
	i, _ := iggcon.NewIdentifier(id)
	return i
}
