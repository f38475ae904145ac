package main

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Relay forwards every TCP connection it accepts to one address: the
// function's container reaches the host only at the docker bridge gateway,
// while a real Iggy server for tests may listen on 127.0.0.1.
type Relay struct {
	l    net.Listener
	to   string
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]struct{}
}

// StartRelay listens on listen and forwards to to until Close.
func StartRelay(listen, to string) (*Relay, error) {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	r := &Relay{l: l, to: to, open: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// Addr is the listening address.
func (r *Relay) Addr() net.Addr { return r.l.Addr() }

func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.l.Accept()
		if err != nil {
			return
		}
		r.wg.Add(1)
		go r.serve(c)
	}
}

func (r *Relay) track(c net.Conn, add bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if add {
		r.open[c] = struct{}{}
	} else {
		delete(r.open, c)
	}
}

func (r *Relay) serve(in net.Conn) {
	defer r.wg.Done()
	defer in.Close()
	out, err := net.DialTimeout("tcp", r.to, 5*time.Second)
	if err != nil {
		return
	}
	defer out.Close()
	r.track(in, true)
	r.track(out, true)
	defer r.track(in, false)
	defer r.track(out, false)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	<-done
}

// Close stops accepting, closes the open connections and waits for them.
func (r *Relay) Close() error {
	err := r.l.Close()
	r.mu.Lock()
	for c := range r.open {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
