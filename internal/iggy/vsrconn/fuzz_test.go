package vsrconn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

// FuzzReadReply feeds arbitrary bytes to the reply reader: it returns a
// reply or an error, never panics, and never reads a body past MaxReply.
func FuzzReadReply(f *testing.F) {
	h := vsr.RequestHeader{Client: vsr.U128{1}, Request: 3, Operation: vsr.OpNonReplicated, Code: vsr.CodePoll}
	f.Add(replyTo(vsr.V011, h, 0, []byte("body")))
	f.Add(evict(h, vsr.EvictStaleClient, 0, 0))
	f.Add(legacyAnswer())
	f.Add(replyTo(vsr.V012, h, 5009, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		client, server := net.Pipe()
		defer client.Close()
		go func() {
			server.Write(b)
			server.Close()
		}()
		l := &link{addr: "fuzz", nc: client, r: bufio.NewReader(client), dialect: vsr.V011, maxReply: 1 << 16}
		_ = client.SetDeadline(time.Now().Add(time.Second))
		rep, err := l.read(context.Background(), &h, nil)
		if err != nil {
			if !errors.Is(err, ErrConnectionLost) {
				t.Fatalf("error %v does not cut the connection", err)
			}
			return
		}
		if len(rep.body)+vsr.HeaderSize > 1<<16 || !bytes.Equal(rep.body, b[vsr.HeaderSize:vsr.HeaderSize+len(rep.body)]) {
			t.Fatalf("body of %d bytes", len(rep.body))
		}
	})
}
