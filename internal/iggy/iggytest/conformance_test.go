package iggytest_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"slices"
	"testing"

	iggcon "github.com/apache/iggy/foreign/go/contracts"
	ierror "github.com/apache/iggy/foreign/go/errors"
)

func TestConformanceLogin(t *testing.T) {
	tg := newTarget(t)
	token := testToken
	if tg.broker == nil {
		token = os.Getenv("IGGY_TEST_TOKEN")
	}
	tests := []struct {
		name    string
		login   func(c iggcon.Client) (*iggcon.IdentityInfo, error)
		wantErr error
		skip    bool
	}{
		{name: "user ok", login: func(c iggcon.Client) (*iggcon.IdentityInfo, error) { return c.LoginUser(tg.user, tg.pass) }},
		{name: "wrong password", login: func(c iggcon.Client) (*iggcon.IdentityInfo, error) { return c.LoginUser(tg.user, tg.pass+"x") }, wantErr: ierror.ErrInvalidCredentials},
		{name: "unknown user", login: func(c iggcon.Client) (*iggcon.IdentityInfo, error) { return c.LoginUser("nobody-here", "secret") }, wantErr: ierror.ErrInvalidCredentials},
		{name: "username too short", login: func(c iggcon.Client) (*iggcon.IdentityInfo, error) { return c.LoginUser("ab", "secret") }, wantErr: ierror.ErrInvalidUsername},
		{name: "password too short", login: func(c iggcon.Client) (*iggcon.IdentityInfo, error) { return c.LoginUser(tg.user, "pw") }, wantErr: ierror.ErrInvalidPassword},
		{name: "token ok", login: func(c iggcon.Client) (*iggcon.IdentityInfo, error) { return c.LoginWithPersonalAccessToken(token) }, skip: token == ""},
		{name: "unknown token", login: func(c iggcon.Client) (*iggcon.IdentityInfo, error) {
			return c.LoginWithPersonalAccessToken("no-such-token-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
		}, wantErr: ierror.ErrResourceNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip {
				t.Skip("set IGGY_TEST_TOKEN to a personal access token of the real server")
			}
			c := tg.dial(t)
			ident, err := tc.login(c)
			if tc.wantErr != nil {
				wantErr(t, "login", err, tc.wantErr)
				_, err := c.GetStreams()
				wantErr(t, "GetStreams after failed login", err, ierror.ErrUnauthenticated)
				return
			}
			if err != nil {
				t.Fatalf("login: %v", err)
			}
			if tg.broker != nil && ident.UserId != 0 {
				t.Fatalf("user id = %d, want 0 (root)", ident.UserId)
			}
			if _, err := c.GetStreams(); err != nil {
				t.Fatalf("GetStreams after login: %v", err)
			}
		})
	}
}

func TestConformanceUnauthenticated(t *testing.T) {
	tg := newTarget(t)
	c := tg.dial(t)
	if err := c.Ping(); err != nil {
		t.Fatalf("ping before login: %v", err)
	}
	calls := map[string]func() error{
		"GetStreams":      func() error { _, err := c.GetStreams(); return err },
		"CreateStream":    func() error { _, err := c.CreateStream(unique("s")); return err },
		"GetStream":       func() error { _, err := c.GetStream(id(t, uint32(0))); return err },
		"ClusterMetadata": func() error { _, err := c.GetClusterMetadata(); return err },
		"PollMessages": func() error {
			_, err := c.PollMessages(id(t, "s"), id(t, "t"), iggcon.NewSingleConsumer(id(t, uint32(1))), iggcon.FirstPollingStrategy(), 1, false, nil)
			return err
		},
	}
	for name, call := range calls {
		wantErr(t, name, call(), ierror.ErrUnauthenticated)
	}
}

func TestConformanceStreamsAndTopics(t *testing.T) {
	tg := newTarget(t)
	c := tg.login(t)
	name := unique("orders")
	sd, err := c.CreateStream(name)
	if err != nil {
		t.Fatalf("create stream: %v", err)
	}
	if sd.Name != name || sd.TopicsCount != 0 || sd.MessagesCount != 0 {
		t.Fatalf("created stream = %+v", sd.Stream)
	}
	if tg.broker != nil && sd.Id != 0 {
		t.Fatalf("first stream id = %d, want 0", sd.Id)
	}
	_, err = c.CreateStream(name)
	wantErr(t, "duplicate stream", err, ierror.ErrStreamNameAlreadyExists)

	for _, sid := range []iggcon.Identifier{id(t, name), id(t, sd.Id)} {
		got, err := c.GetStream(sid)
		if err != nil {
			t.Fatalf("get stream %v: %v", sid, err)
		}
		if got.Id != sd.Id || got.Name != name {
			t.Fatalf("get stream %v = %+v", sid, got.Stream)
		}
	}
	_, err = c.GetStream(id(t, "no-such-stream"))
	wantErr(t, "missing stream by name", err, ierror.ErrStreamIdNotFound)
	_, err = c.GetStream(id(t, uint32(987654)))
	wantErr(t, "missing stream by id", err, ierror.ErrStreamIdNotFound)

	sid := id(t, name)
	td, err := c.CreateTopic(sid, "events", 3, iggcon.CompressionAlgorithmNone, iggcon.IggyExpiryNeverExpire, 0, nil)
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if td.Name != "events" || td.PartitionsCount != 3 || len(td.Partitions) != 3 || td.CompressionAlgorithm != 1 {
		t.Fatalf("created topic = %+v", td)
	}
	if tg.broker != nil && td.Id != 0 {
		t.Fatalf("first topic id = %d, want 0", td.Id)
	}
	for i, p := range td.Partitions {
		if p.Id != uint32(i) || p.MessagesCount != 0 || p.CurrentOffset != 0 {
			t.Fatalf("partition %d = %+v, want id %d and empty", i, p, i)
		}
	}
	_, err = c.CreateTopic(sid, "events", 1, iggcon.CompressionAlgorithmNone, iggcon.IggyExpiryNeverExpire, 0, nil)
	wantErr(t, "duplicate topic", err, ierror.ErrTopicNameAlreadyExists)
	_, err = c.CreateTopic(id(t, "no-such-stream"), "x", 1, iggcon.CompressionAlgorithmNone, iggcon.IggyExpiryNeverExpire, 0, nil)
	wantErr(t, "topic in missing stream", err, ierror.ErrStreamIdNotFound)
	_, err = c.CreateTopic(sid, "zero-compression", 1, 0, iggcon.IggyExpiryNeverExpire, 0, nil)
	wantErr(t, "compression 0", err, ierror.ErrInvalidCommand)

	for _, tid := range []iggcon.Identifier{id(t, "events"), id(t, td.Id)} {
		got, err := c.GetTopic(id(t, sd.Id), tid)
		if err != nil {
			t.Fatalf("get topic %v: %v", tid, err)
		}
		if got.Id != td.Id || len(got.Partitions) != 3 {
			t.Fatalf("get topic %v = %+v", tid, got)
		}
	}
	_, err = c.GetTopic(sid, id(t, "no-such-topic"))
	wantErr(t, "missing topic", err, ierror.ErrTopicIdNotFound)
	_, err = c.GetTopic(id(t, "no-such-stream"), id(t, "events"))
	wantErr(t, "topic of missing stream", err, ierror.ErrTopicIdNotFound)

	got, err := c.GetStream(sid)
	if err != nil {
		t.Fatalf("get stream: %v", err)
	}
	if got.TopicsCount != 1 || len(got.Topics) != 1 || got.Topics[0].Name != "events" {
		t.Fatalf("stream topics = %d %+v", got.TopicsCount, got.Topics)
	}
	topics, err := c.GetTopics(sid)
	if err != nil || len(topics) != 1 {
		t.Fatalf("get topics = %+v, %v", topics, err)
	}
	if err := c.DeleteTopic(sid, id(t, "events")); err != nil {
		t.Fatalf("delete topic: %v", err)
	}
	_, err = c.GetTopic(sid, id(t, "events"))
	wantErr(t, "deleted topic", err, ierror.ErrTopicIdNotFound)
	if err := c.DeleteStream(sid); err != nil {
		t.Fatalf("delete stream: %v", err)
	}
	wantErr(t, "delete deleted stream", c.DeleteStream(sid), ierror.ErrStreamIdNotFound)
}

func TestConformanceSendPartitioning(t *testing.T) {
	tg := newTarget(t)
	c := tg.login(t)
	f := newTopic(t, c, 3)
	single := iggcon.NewSingleConsumer(id(t, uint32(1)))
	count := func(p uint32) int {
		pm, err := c.PollMessages(f.streamID, f.topicID, single, iggcon.FirstPollingStrategy(), 100, false, ptr(p))
		if err != nil {
			t.Fatalf("poll partition %d: %v", p, err)
		}
		return len(pm.Messages)
	}

	send(t, c, f, iggcon.PartitionId(1), "a", "b")
	if got := []int{count(0), count(1), count(2)}; !slices.Equal(got, []int{0, 2, 0}) {
		t.Fatalf("after PartitionId(1): counts %v, want [0 2 0]", got)
	}
	for range 3 {
		send(t, c, f, iggcon.None(), "balanced")
	}
	if got := []int{count(0), count(1), count(2)}; !slices.Equal(got, []int{1, 3, 1}) {
		t.Fatalf("after 3 balanced batches: counts %v, want one batch in each partition [1 3 1]", got)
	}
	send(t, c, f, iggcon.None(), "balanced", "same batch")
	if got := []int{count(0), count(1), count(2)}; slices.Max([]int{got[0] - 1, got[1] - 3, got[2] - 1}) != 2 {
		t.Fatalf("a 2-message balanced batch was split: counts %v after [1 3 1]", got)
	}
	key, err := iggcon.EntityIdString("customer-42")
	if err != nil {
		t.Fatal(err)
	}
	before := []int{count(0), count(1), count(2)}
	send(t, c, f, key, "k1")
	send(t, c, f, key, "k2")
	after := []int{count(0), count(1), count(2)}
	changed := 0
	for i := range after {
		if d := after[i] - before[i]; d == 2 {
			changed++
		} else if d != 0 {
			t.Fatalf("same key spread over partitions: before %v after %v", before, after)
		}
	}
	if changed != 1 {
		t.Fatalf("same key: before %v after %v, want both in one partition", before, after)
	}
	err = c.SendMessages(f.streamID, f.topicID, iggcon.PartitionId(7), []iggcon.IggyMessage{msg(t, "x")})
	wantErr(t, "missing partition", err, ierror.ErrPartitionNotFound)
	err = c.SendMessages(id(t, "no-such-stream"), f.topicID, iggcon.None(), []iggcon.IggyMessage{msg(t, "x")})
	wantErr(t, "missing stream", err, ierror.ErrStreamIdNotFound)
	err = c.SendMessages(f.streamID, id(t, "no-such-topic"), iggcon.None(), []iggcon.IggyMessage{msg(t, "x")})
	wantErr(t, "missing topic", err, ierror.ErrTopicIdNotFound)
}

func TestConformanceHeadersPayloadAndMetadata(t *testing.T) {
	tg := newTarget(t)
	c := tg.login(t)
	f := newTopic(t, c, 1)
	keyCT, _ := iggcon.NewHeaderKeyString("content-type")
	keyAttempt, _ := iggcon.NewHeaderKeyString("attempt")
	keyRaw, _ := iggcon.NewHeaderKeyRaw([]byte{0, 1, 2, 0xff})
	headers := []iggcon.HeaderEntry{
		{Key: keyCT, Value: iggcon.HeaderValue{Kind: iggcon.String, Value: []byte("application/json")}},
		{Key: keyAttempt, Value: iggcon.HeaderValue{Kind: iggcon.Uint32, Value: binary.LittleEndian.AppendUint32(nil, 3)}},
		{Key: keyRaw, Value: iggcon.HeaderValue{Kind: iggcon.Bool, Value: []byte{1}}},
	}
	payload := []byte{'{', 0, 0xff, 0x80, '\n', '}'}
	fixedID := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	m1, err := iggcon.NewIggyMessage(payload, iggcon.WithUserHeaders(headers), iggcon.WithID(fixedID))
	if err != nil {
		t.Fatal(err)
	}
	m2 := msg(t, "second")
	if err := c.SendMessages(f.streamID, f.topicID, iggcon.PartitionId(0), []iggcon.IggyMessage{m1, m2}); err != nil {
		t.Fatalf("send: %v", err)
	}
	send(t, c, f, iggcon.PartitionId(0), "third")

	pm, err := c.PollMessages(f.streamID, f.topicID, iggcon.NewSingleConsumer(id(t, uint32(1))), iggcon.OffsetPollingStrategy(0), 10, false, ptr(uint32(0)))
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	if pm.PartitionId != 0 || pm.CurrentOffset != 2 || pm.MessageCount != 3 || len(pm.Messages) != 3 {
		t.Fatalf("poll header = partition %d current %d count %d (%d decoded)", pm.PartitionId, pm.CurrentOffset, pm.MessageCount, len(pm.Messages))
	}
	got := pm.Messages[0]
	if !bytes.Equal(got.Payload, payload) {
		t.Fatalf("payload = %x, want %x", got.Payload, payload)
	}
	if !bytes.Equal(got.UserHeaders, m1.UserHeaders) {
		t.Fatalf("user headers = %x, want %x", got.UserHeaders, m1.UserHeaders)
	}
	decoded, err := iggcon.DeserializeHeaders(got.UserHeaders)
	if err != nil || len(decoded) != 3 || string(decoded[0].Value.Value) != "application/json" {
		t.Fatalf("decoded headers = %+v, %v", decoded, err)
	}
	if got.Header.Id != iggcon.MessageID(fixedID) {
		t.Fatalf("id = %x, want the producer's %x", got.Header.Id, fixedID)
	}
	if got.Header.OriginTimestamp != m1.Header.OriginTimestamp {
		t.Fatalf("origin timestamp = %d, want %d", got.Header.OriginTimestamp, m1.Header.OriginTimestamp)
	}
	if pm.Messages[1].Header.Id == (iggcon.MessageID{}) || pm.Messages[2].Header.Id == (iggcon.MessageID{}) || pm.Messages[1].Header.Id == pm.Messages[2].Header.Id {
		t.Fatalf("server-assigned ids = %x, %x; want distinct non-zero", pm.Messages[1].Header.Id, pm.Messages[2].Header.Id)
	}
	if o := offsets(pm); !slices.Equal(o, []uint64{0, 1, 2}) {
		t.Fatalf("offsets = %v", o)
	}
	ts := []uint64{pm.Messages[0].Header.Timestamp, pm.Messages[1].Header.Timestamp, pm.Messages[2].Header.Timestamp}
	if ts[0] == 0 || ts[0] != ts[1] || ts[2] <= ts[1] {
		t.Fatalf("timestamps = %v, want one value per batch, increasing across batches", ts)
	}
	if d := int64(ts[0]) - int64(m1.Header.OriginTimestamp); d < 0 || d > 60e6 {
		t.Fatalf("server timestamp %d is not in microseconds near origin %d", ts[0], m1.Header.OriginTimestamp)
	}
	// Corrupting what a client received must not change what the broker stores.
	pm.Messages[0].Payload[0] = 'X'
	again, err := c.PollMessages(f.streamID, f.topicID, iggcon.NewSingleConsumer(id(t, uint32(1))), iggcon.OffsetPollingStrategy(0), 1, false, ptr(uint32(0)))
	if err != nil || !bytes.Equal(again.Messages[0].Payload, payload) {
		t.Fatalf("re-poll payload = %x, %v; want %x", again.Messages[0].Payload, err, payload)
	}
	td, err := c.GetTopic(f.streamID, f.topicID)
	if err != nil {
		t.Fatal(err)
	}
	if td.MessagesCount != 3 || td.Partitions[0].MessagesCount != 3 || td.Partitions[0].CurrentOffset != 2 || td.Size == 0 {
		t.Fatalf("topic stats = %+v", td)
	}
}

func TestConformancePollStrategies(t *testing.T) {
	tg := newTarget(t)
	c := tg.login(t)
	f := newTopic(t, c, 1)
	for i := range 10 { // one batch each: distinct server timestamps
		send(t, c, f, iggcon.PartitionId(0), string(rune('a'+i)))
	}
	p0 := ptr(uint32(0))
	all, err := c.PollMessages(f.streamID, f.topicID, iggcon.NewSingleConsumer(id(t, uint32(9))), iggcon.FirstPollingStrategy(), 10, false, p0)
	if err != nil || len(all.Messages) != 10 {
		t.Fatalf("poll all: %v, %v", all, err)
	}
	ts5 := all.Messages[5].Header.Timestamp
	consumer := iggcon.NewSingleConsumer(id(t, uint32(1)))
	tests := []struct {
		name     string
		strategy iggcon.PollingStrategy
		count    uint32
		want     []uint64
	}{
		{"offset", iggcon.OffsetPollingStrategy(3), 4, []uint64{3, 4, 5, 6}},
		{"offset near end", iggcon.OffsetPollingStrategy(8), 5, []uint64{8, 9}},
		{"offset beyond end", iggcon.OffsetPollingStrategy(10), 5, []uint64{}},
		{"timestamp", iggcon.TimestampPollingStrategy(ts5), 2, []uint64{5, 6}},
		{"timestamp future", iggcon.TimestampPollingStrategy(all.Messages[9].Header.Timestamp + 1), 2, []uint64{}},
		{"first", iggcon.FirstPollingStrategy(), 3, []uint64{0, 1, 2}},
		{"last", iggcon.LastPollingStrategy(), 3, []uint64{7, 8, 9}},
		{"last more than all", iggcon.LastPollingStrategy(), 50, []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"next without stored offset", iggcon.NextPollingStrategy(), 2, []uint64{0, 1}},
		{"count zero", iggcon.FirstPollingStrategy(), 0, []uint64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pm, err := c.PollMessages(f.streamID, f.topicID, consumer, tc.strategy, tc.count, false, p0)
			if err != nil {
				t.Fatalf("poll: %v", err)
			}
			if got := offsets(pm); !slices.Equal(got, tc.want) {
				t.Fatalf("offsets = %v, want %v", got, tc.want)
			}
			if pm.CurrentOffset != 9 || int(pm.MessageCount) != len(tc.want) {
				t.Fatalf("header current %d count %d", pm.CurrentOffset, pm.MessageCount)
			}
		})
	}

	t.Run("next without auto commit repeats", func(t *testing.T) {
		for range 2 {
			pm, err := c.PollMessages(f.streamID, f.topicID, consumer, iggcon.NextPollingStrategy(), 3, false, p0)
			if err != nil || !slices.Equal(offsets(pm), []uint64{0, 1, 2}) {
				t.Fatalf("next = %v, %v; want [0 1 2] again", offsets(pm), err)
			}
		}
		off, err := c.GetConsumerOffset(consumer, f.streamID, f.topicID, p0)
		if err != nil || off != nil {
			t.Fatalf("stored offset = %+v, %v; want nil, nil", off, err)
		}
	})
	t.Run("next with auto commit advances", func(t *testing.T) {
		ac := iggcon.NewSingleConsumer(id(t, uint32(2)))
		for _, want := range [][]uint64{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}, {}} {
			pm, err := c.PollMessages(f.streamID, f.topicID, ac, iggcon.NextPollingStrategy(), 4, true, p0)
			if err != nil || !slices.Equal(offsets(pm), want) {
				t.Fatalf("next = %v, %v; want %v", offsets(pm), err, want)
			}
		}
		off, err := c.GetConsumerOffset(ac, f.streamID, f.topicID, p0)
		if err != nil || off == nil || off.StoredOffset != 9 || off.CurrentOffset != 9 || off.PartitionId != 0 {
			t.Fatalf("stored offset = %+v, %v; want 9", off, err)
		}
	})
	t.Run("store then next resumes after it", func(t *testing.T) {
		sc := iggcon.NewSingleConsumer(id(t, uint32(3)))
		if err := c.StoreConsumerOffset(sc, f.streamID, f.topicID, 4, p0); err != nil {
			t.Fatalf("store: %v", err)
		}
		pm, err := c.PollMessages(f.streamID, f.topicID, sc, iggcon.NextPollingStrategy(), 2, false, p0)
		if err != nil || !slices.Equal(offsets(pm), []uint64{5, 6}) {
			t.Fatalf("next after store 4 = %v, %v", offsets(pm), err)
		}
		wantErr(t, "store beyond current", c.StoreConsumerOffset(sc, f.streamID, f.topicID, 10, p0), ierror.ErrInvalidOffset)
	})
	t.Run("single consumer on missing partition", func(t *testing.T) {
		_, err := c.PollMessages(f.streamID, f.topicID, consumer, iggcon.FirstPollingStrategy(), 1, false, ptr(uint32(5)))
		wantErr(t, "poll", err, ierror.ErrPartitionNotFound)
	})
}

func TestConformanceEmptyPartitionAndOffsets(t *testing.T) {
	tg := newTarget(t)
	c := tg.login(t)
	f := newTopic(t, c, 2)
	consumer := iggcon.NewSingleConsumer(id(t, uint32(1)))
	pm, err := c.PollMessages(f.streamID, f.topicID, consumer, iggcon.NextPollingStrategy(), 10, true, ptr(uint32(1)))
	if err != nil || pm.PartitionId != 1 || pm.CurrentOffset != 0 || len(pm.Messages) != 0 {
		t.Fatalf("poll empty partition = %+v, %v", pm, err)
	}
	wantErr(t, "store on never-written partition", c.StoreConsumerOffset(consumer, f.streamID, f.topicID, 0, ptr(uint32(1))), ierror.ErrInvalidOffset)
	off, err := c.GetConsumerOffset(consumer, f.streamID, f.topicID, ptr(uint32(1)))
	if err != nil || off != nil {
		t.Fatalf("offset before any store = %+v, %v; want nil, nil", off, err)
	}
	off, err = c.GetConsumerOffset(consumer, id(t, "no-such-stream"), f.topicID, nil)
	if err != nil || off != nil {
		t.Fatalf("offset of missing stream = %+v, %v; want nil, nil", off, err)
	}
}

func TestConformanceConsumerGroupMembership(t *testing.T) {
	tg := newTarget(t)
	admin := tg.login(t)
	const parts = 6
	f := newTopic(t, admin, parts)
	g := unique("g")
	cg, err := admin.CreateConsumerGroup(f.streamID, f.topicID, g)
	if err != nil {
		t.Fatalf("create group: %v", err)
	}
	if cg.Name != g || cg.PartitionsCount != parts || cg.MembersCount != 0 {
		t.Fatalf("created group = %+v", cg.ConsumerGroup)
	}
	_, err = admin.CreateConsumerGroup(f.streamID, f.topicID, g)
	wantErr(t, "duplicate group", err, ierror.ErrConsumerGroupNameAlreadyExists)
	_, err = admin.GetConsumerGroup(f.streamID, f.topicID, id(t, "no-such-group"))
	wantErr(t, "missing group", err, ierror.ErrConsumerGroupIdNotFound)
	wantErr(t, "join missing group", admin.JoinConsumerGroup(f.streamID, f.topicID, id(t, "no-such-group")), ierror.ErrConsumerGroupIdNotFound)
	wantErr(t, "join in missing stream", admin.JoinConsumerGroup(id(t, "no-such-stream"), f.topicID, id(t, g)), ierror.ErrStreamIdNotFound)
	wantErr(t, "leave when not a member", admin.LeaveConsumerGroup(f.streamID, f.topicID, id(t, g)), ierror.ErrConsumerGroupMemberNotFound)
	gid := id(t, g)
	join := func(c iggcon.Client) {
		t.Helper()
		if err := c.JoinConsumerGroup(f.streamID, f.topicID, gid); err != nil {
			t.Fatalf("join: %v", err)
		}
	}

	a := tg.login(t)
	join(a)
	join(a) // idempotent
	d := group(t, admin, f, g)
	if counts := checkExclusive(t, d, parts); len(counts) != 1 || d.MembersCount != 1 {
		t.Fatalf("one member: %+v", d)
	}

	b := tg.login(t)
	join(b)
	d = group(t, admin, f, g)
	counts := checkExclusive(t, d, parts)
	if len(counts) != 2 {
		t.Fatalf("two members: %+v", d.Members)
	}
	for m, n := range counts {
		if n == 0 {
			t.Fatalf("member %d got no partition of %d with 2 members: %+v", m, parts, d.Members)
		}
	}

	c3 := tg.login(t)
	join(c3)
	d = group(t, admin, f, g)
	counts = checkExclusive(t, d, parts)
	if len(counts) != 3 {
		t.Fatalf("three members: %+v", d.Members)
	}
	for m, n := range counts {
		if n == 0 {
			t.Fatalf("member %d got no partition of %d with 3 members: %+v", m, parts, d.Members)
		}
	}

	if err := b.LeaveConsumerGroup(f.streamID, f.topicID, gid); err != nil {
		t.Fatalf("leave: %v", err)
	}
	d = group(t, admin, f, g)
	if counts = checkExclusive(t, d, parts); len(counts) != 2 {
		t.Fatalf("after leave: %+v", d.Members)
	}
	_, err = b.PollMessages(f.streamID, f.topicID, iggcon.NewGroupConsumer(gid), iggcon.NextPollingStrategy(), 1, false, nil)
	wantErr(t, "poll after leave", err, ierror.ErrConsumerGroupMemberNotFound)

	if err := c3.Close(); err != nil {
		t.Fatalf("close third client: %v", err)
	}
	eventually(t, "lone member to own every partition after connection close", func() bool {
		d := group(t, admin, f, g)
		return len(d.Members) == 1 && len(d.Members[0].Partitions) == parts
	})
	checkExclusive(t, group(t, admin, f, g), parts)
}

func TestConformanceConsumerGroupPollAndStore(t *testing.T) {
	tg := newTarget(t)
	admin := tg.login(t)
	f := newTopic(t, admin, 3)
	for p := range uint32(3) {
		send(t, admin, f, iggcon.PartitionId(p), "m0", "m1", "m2", "m3")
	}
	g := unique("g")
	if _, err := admin.CreateConsumerGroup(f.streamID, f.topicID, g); err != nil {
		t.Fatal(err)
	}
	gid := id(t, g)
	consumer := iggcon.NewGroupConsumer(gid)

	outsider := tg.login(t)
	_, err := outsider.PollMessages(f.streamID, f.topicID, consumer, iggcon.NextPollingStrategy(), 1, false, nil)
	wantErr(t, "poll by non-member", err, ierror.ErrConsumerGroupMemberNotFound)
	wantErr(t, "store by non-member", outsider.StoreConsumerOffset(consumer, f.streamID, f.topicID, 0, ptr(uint32(0))), ierror.ErrConsumerGroupMemberNotFound)
	_, err = outsider.PollMessages(f.streamID, f.topicID, iggcon.NewGroupConsumer(id(t, "no-such-group")), iggcon.NextPollingStrategy(), 1, false, nil)
	wantErr(t, "poll missing group", err, ierror.ErrConsumerGroupIdNotFound)

	a := tg.login(t)
	if err := a.JoinConsumerGroup(f.streamID, f.topicID, gid); err != nil {
		t.Fatal(err)
	}
	// A lone member round-robins over all partitions; the reply says which.
	seen := map[uint32]bool{}
	for range 3 {
		pm, err := a.PollMessages(f.streamID, f.topicID, consumer, iggcon.NextPollingStrategy(), 2, false, nil)
		if err != nil {
			t.Fatalf("group poll: %v", err)
		}
		if !slices.Equal(offsets(pm), []uint64{0, 1}) || pm.CurrentOffset != 3 {
			t.Fatalf("group poll partition %d = %v current %d", pm.PartitionId, offsets(pm), pm.CurrentOffset)
		}
		seen[pm.PartitionId] = true
		if err := a.StoreConsumerOffset(consumer, f.streamID, f.topicID, 1, ptr(pm.PartitionId)); err != nil {
			t.Fatalf("store partition %d: %v", pm.PartitionId, err)
		}
	}
	if len(seen) != 3 {
		t.Fatalf("round robin visited %v, want all 3 partitions", seen)
	}
	for p := range uint32(3) {
		off, err := outsider.GetConsumerOffset(consumer, f.streamID, f.topicID, ptr(p))
		if err != nil || off == nil || off.StoredOffset != 1 || off.PartitionId != p || off.CurrentOffset != 3 {
			t.Fatalf("group offset partition %d = %+v, %v", p, off, err)
		}
	}
	pm, err := a.PollMessages(f.streamID, f.topicID, consumer, iggcon.NextPollingStrategy(), 10, false, ptr(uint32(2)))
	if err != nil || !slices.Equal(offsets(pm), []uint64{2, 3}) || pm.PartitionId != 2 {
		t.Fatalf("next after store 1 on partition 2 = %v %v", offsets(pm), err)
	}
	wantErr(t, "store beyond current", a.StoreConsumerOffset(consumer, f.streamID, f.topicID, 4, ptr(uint32(2))), ierror.ErrInvalidOffset)
	// Commit everything polled so that joins hand partitions over at once.
	if err := a.StoreConsumerOffset(consumer, f.streamID, f.topicID, 3, ptr(uint32(2))); err != nil {
		t.Fatal(err)
	}

	// A second group keeps its own offsets.
	g2 := unique("g2")
	if _, err := admin.CreateConsumerGroup(f.streamID, f.topicID, g2); err != nil {
		t.Fatal(err)
	}
	off, err := outsider.GetConsumerOffset(iggcon.NewGroupConsumer(id(t, g2)), f.streamID, f.topicID, ptr(uint32(0)))
	if err != nil || off != nil {
		t.Fatalf("second group's offset = %+v, %v; want nil, nil", off, err)
	}

	// With three members each owns one partition: others' partitions poll empty.
	b := tg.login(t)
	c3 := tg.login(t)
	for _, c := range []iggcon.Client{b, c3} {
		if err := c.JoinConsumerGroup(f.streamID, f.topicID, gid); err != nil {
			t.Fatal(err)
		}
	}
	d := group(t, admin, f, g)
	checkExclusive(t, d, 3)
	owner := map[uint32]iggcon.Client{}
	for _, c := range []iggcon.Client{a, b, c3} {
		pm, err := c.PollMessages(f.streamID, f.topicID, consumer, iggcon.OffsetPollingStrategy(0), 1, false, nil)
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		if len(pm.Messages) != 1 {
			t.Fatalf("member got %+v, want one message of its own partition", pm)
		}
		if _, dup := owner[pm.PartitionId]; dup {
			t.Fatalf("partition %d served to two members", pm.PartitionId)
		}
		owner[pm.PartitionId] = c
	}
	notOwned := (func() uint32 {
		for p := range uint32(3) {
			if owner[p] != a {
				return p
			}
		}
		return 0
	})()
	pm, err = a.PollMessages(f.streamID, f.topicID, consumer, iggcon.OffsetPollingStrategy(0), 5, false, ptr(notOwned))
	if err != nil || pm.PartitionId != 0 || pm.CurrentOffset != 0 || pm.MessageCount != 0 || len(pm.Messages) != 0 {
		t.Fatalf("poll of a partition owned by another member = %+v, %v; want empty (0,0,0)", pm, err)
	}
	wantErr(t, "store on a partition owned by another member (3022)", a.StoreConsumerOffset(consumer, f.streamID, f.topicID, 0, ptr(notOwned)), ierror.ErrError)
}

// TestConformanceCooperativeHandOver follows 0.8's pending revocation: a partition
// the old owner polled moves only after the old owner commits what it polled.
func TestConformanceCooperativeHandOver(t *testing.T) {
	tg := newTarget(t)
	admin := tg.login(t)
	f := newTopic(t, admin, 2)
	send(t, admin, f, iggcon.PartitionId(0), "a", "b")
	send(t, admin, f, iggcon.PartitionId(1), "c", "d")
	g := unique("g")
	if _, err := admin.CreateConsumerGroup(f.streamID, f.topicID, g); err != nil {
		t.Fatal(err)
	}
	gid := id(t, g)
	consumer := iggcon.NewGroupConsumer(gid)
	a := tg.login(t)
	if err := a.JoinConsumerGroup(f.streamID, f.topicID, gid); err != nil {
		t.Fatal(err)
	}
	for p := range uint32(2) {
		pm, err := a.PollMessages(f.streamID, f.topicID, consumer, iggcon.NextPollingStrategy(), 10, false, ptr(p))
		if err != nil || len(pm.Messages) != 2 {
			t.Fatalf("poll partition %d: %+v %v", p, pm, err)
		}
	}
	b := tg.login(t)
	if err := b.JoinConsumerGroup(f.streamID, f.topicID, gid); err != nil {
		t.Fatal(err)
	}
	d := group(t, admin, f, g)
	checkExclusive(t, d, 2)
	var pendingPart uint32
	for _, m := range d.Members {
		if len(m.Partitions) == 2 {
			pendingPart = m.Partitions[1]
		} else if len(m.Partitions) != 0 {
			t.Fatalf("uncommitted partitions moved before the owner committed: %+v", d.Members)
		}
	}
	// b owns nothing yet: its polls come back as the empty (0,0,0) header.
	pm, err := b.PollMessages(f.streamID, f.topicID, consumer, iggcon.NextPollingStrategy(), 10, false, nil)
	if err != nil || pm.PartitionId != 0 || pm.CurrentOffset != 0 || len(pm.Messages) != 0 {
		t.Fatalf("poll by member without partitions = %+v, %v", pm, err)
	}
	if err := a.StoreConsumerOffset(consumer, f.streamID, f.topicID, 1, ptr(pendingPart)); err != nil {
		t.Fatalf("old owner's commit: %v", err)
	}
	d = group(t, admin, f, g)
	counts := checkExclusive(t, d, 2)
	for m, n := range counts {
		if n != 1 {
			t.Fatalf("after commit member %d owns %d partitions, want 1 each: %+v", m, n, d.Members)
		}
	}
	pm, err = b.PollMessages(f.streamID, f.topicID, consumer, iggcon.NextPollingStrategy(), 10, false, nil)
	if err != nil || pm.PartitionId != pendingPart || len(pm.Messages) != 0 {
		t.Fatalf("new owner's poll = %+v, %v; want partition %d with nothing after the commit", pm, err, pendingPart)
	}
}

func TestConformanceSeededTopicDrain(t *testing.T) {
	tg := newTarget(t)
	br := tg.hooks(t)
	if err := br.Seed("app", "logs", 4, 1000); err != nil {
		t.Fatalf("seed: %v", err)
	}
	c := tg.login(t)
	td, err := c.GetTopic(id(t, "app"), id(t, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	if len(td.Partitions) != 4 || td.MessagesCount != 1000 {
		t.Fatalf("seeded topic: %d partitions, %d messages", len(td.Partitions), td.MessagesCount)
	}
	if _, err := c.CreateConsumerGroup(id(t, "app"), id(t, "logs"), "sink"); err != nil {
		t.Fatal(err)
	}
	if err := c.JoinConsumerGroup(id(t, "app"), id(t, "logs"), id(t, "sink")); err != nil {
		t.Fatal(err)
	}
	consumer := iggcon.NewGroupConsumer(id(t, "sink"))
	got, emptyInRow := 0, 0
	for emptyInRow < 4 {
		pm, err := c.PollMessages(id(t, "app"), id(t, "logs"), consumer, iggcon.NextPollingStrategy(), 64, false, nil)
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		if len(pm.Messages) == 0 {
			emptyInRow++
			continue
		}
		emptyInRow = 0
		for _, m := range pm.Messages {
			if n := len(m.Payload); n < 200 || n > 400 || !json.Valid(m.Payload) {
				t.Fatalf("seed payload of %d bytes: %s", n, m.Payload)
			}
			h, err := iggcon.DeserializeHeaders(m.UserHeaders)
			if err != nil || len(h) != 3 || string(h[0].Key.Value) != "content-type" || h[1].Value.Kind != iggcon.Uint32 {
				t.Fatalf("seed headers %+v, %v", h, err)
			}
		}
		got += len(pm.Messages)
		last := pm.Messages[len(pm.Messages)-1].Header.Offset
		if err := c.StoreConsumerOffset(consumer, id(t, "app"), id(t, "logs"), last, ptr(pm.PartitionId)); err != nil {
			t.Fatalf("store: %v", err)
		}
	}
	if got != 1000 {
		t.Fatalf("drained %d messages, want 1000", got)
	}
	for p := range uint32(4) {
		if off, ok := br.GroupOffset("app", "logs", "sink", p); !ok || off != 249 {
			t.Fatalf("group offset of partition %d = %d, %v; want 249", p, off, ok)
		}
	}
}
