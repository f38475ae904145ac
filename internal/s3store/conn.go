package s3store

import (
	"context"
	"errors"
	"io"
	"net"
)

// bodyConn is a connection that lets a request body write itself from
// its own memory. net/http hands the connection a body wrapped in an
// io.LimitedReader (its Content-Length), which hides the body's WriterTo:
// without this every byte of a PUT is copied through a 32 KiB buffer on
// its way to the socket, 32 KiB per write call. Over TLS the connection
// underneath is not this one, and nothing changes.
type bodyConn struct{ net.Conn }

// errBodyTooLong is a body that holds more than its Content-Length.
var errBodyTooLong = errors.New("upload: request body is longer than its Content-Length")

func (c bodyConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if wt, ok := lr.R.(io.WriterTo); ok {
			lw := &limitedWriter{w: c.Conn, left: lr.N}
			n, err := wt.WriteTo(lw)
			lr.N -= n
			return n, err
		}
	}
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// limitedWriter passes on at most left bytes and fails a write beyond.
type limitedWriter struct {
	w    io.Writer
	left int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		n, err := l.w.Write(p[:l.left])
		l.left -= int64(n)
		if err == nil {
			err = errBodyTooLong
		}
		return n, err
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}

// dialBodyConn wraps dial so that the connections it makes are bodyConns.
func dialBodyConn(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return bodyConn{c}, nil
	}
}
