package s3store

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// writeCounter is a connection that keeps what was written to it and
// counts the Write calls.
type writeCounter struct {
	net.Conn
	mu     sync.Mutex
	got    bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.got.Write(p)
}

func (w *writeCounter) sent() (int, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.Len(), w.writes
}

// The bodies net/http hands a connection: the body behind a LimitedReader
// of its Content-Length.
func TestBodyConnWritesTheBodyFromItsSlice(t *testing.T) {
	data := randomBytes(3, 3*maxWrite+17)
	for _, tc := range []struct {
		name       string
		body       io.Reader
		limit      int64
		want       int
		err        error
		fromSlice  bool // written straight from the body, in pieces of maxWrite
		wantWrites int
	}{
		{name: "whole body", body: newFencedBody(data, nil), limit: int64(len(data)), want: len(data), fromSlice: true, wantWrites: 4},
		{name: "longer than its length", body: newFencedBody(data, nil), limit: int64(len(data) - 10), want: len(data) - 10, err: errBodyTooLong, fromSlice: true},
		{name: "a reader that cannot write itself", body: struct{ io.Reader }{bytes.NewReader(data)}, limit: int64(len(data)), want: len(data)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wc := &writeCounter{}
			n, err := bodyConn{wc}.ReadFrom(&io.LimitedReader{R: tc.body, N: tc.limit})
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			got, writes := wc.sent()
			if n != int64(tc.want) || got != tc.want || !bytes.Equal(wc.got.Bytes(), data[:tc.want]) {
				t.Fatalf("ReadFrom = %d, %d bytes sent; want the first %d bytes of the body", n, got, tc.want)
			}
			if tc.wantWrites > 0 && writes != tc.wantWrites {
				t.Errorf("%d writes, want %d (pieces of %d bytes from the body itself)", writes, tc.wantWrites, maxWrite)
			}
			if !tc.fromSlice && writes < len(data)/(32<<10) {
				t.Errorf("%d writes: the fallback should copy through a buffer", writes)
			}
		})
	}
}

// WriteTo keeps Read's promises: the last byte waits for the gate, a
// failed gate ends the body, and a fenced body writes nothing more.
func TestFencedBodyWriteToHoldsTheLastByte(t *testing.T) {
	data := randomBytes(4, maxWrite+5)
	for _, tc := range []struct {
		name   string
		settle func(*Gate, *fencedBody)
		sent   int
		err    error
	}{
		{"opened", func(g *Gate, _ *fencedBody) { g.Open() }, len(data), nil},
		{"failed", func(g *Gate, _ *fencedBody) { g.Fail(errors.New("intent not recorded")) }, len(data) - 1, ErrGateFailed},
		{"fenced", func(_ *Gate, b *fencedBody) { b.fence() }, len(data) - 1, errFenced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := NewGate()
			body := newFencedBody(data, gate)
			wc := &writeCounter{}
			done := make(chan error, 1)
			go func() {
				_, err := body.WriteTo(wc)
				done <- err
			}()
			deadline := time.Now().Add(10 * time.Second)
			for got, _ := wc.sent(); got < len(data)-1; got, _ = wc.sent() {
				if time.Now().After(deadline) {
					t.Fatalf("%d bytes written before the gate settled, want %d", got, len(data)-1)
				}
				time.Sleep(time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond) // a last byte written anyway would be here by now
			if got, _ := wc.sent(); got != len(data)-1 {
				t.Fatalf("%d bytes written while the gate was held, want %d", got, len(data)-1)
			}
			tc.settle(gate, body)
			err := <-done
			if !errors.Is(err, tc.err) {
				t.Fatalf("WriteTo: err = %v, want %v", err, tc.err)
			}
			if got, _ := wc.sent(); got != tc.sent || !bytes.Equal(wc.got.Bytes(), data[:tc.sent]) {
				t.Fatalf("%d bytes written, want the first %d of the body", got, tc.sent)
			}
		})
	}
}
