package s3store

import (
	"bytes"
	"context"
	"io"
	"testing"
)

// FuzzStreamWrites checks that however write splits the body, Stream stores
// exactly the bytes written, in one PutObject up to a part and in parts
// beyond it. data drives both the chunk sizes and the body length.
func FuzzStreamWrites(f *testing.F) {
	f.Add([]byte{0}, uint16(0))
	f.Add([]byte{1, 2, 3}, uint16(100))
	f.Add([]byte{255, 255, 0, 7}, uint16(5120))    // 5 MiB exactly: single PutObject
	f.Add([]byte{200, 13, 99}, uint16(5121))       // one byte over: two parts
	f.Add([]byte{9, 250, 1, 1, 64}, uint16(10500)) // three parts
	u := New(newFake(), Options{Bucket: "b", PartSize: MinPartSize})
	body := randomBytes(42, 3*MinPartSize)
	f.Fuzz(func(t *testing.T, chunks []byte, kib uint16) {
		size := min(int(kib)*1024, len(body))
		want := body[:size]
		fake := newFake()
		u.client = fake
		res, err := u.Stream(context.Background(), Object{Key: "k"}, func(w io.Writer) error {
			rest := want
			for i := 0; len(rest) > 0; i++ {
				n := 1
				if len(chunks) > 0 {
					// Chunk sizes from 1 byte to ~1 MiB, cycling through the input.
					c := int(chunks[i%len(chunks)])
					n = c*c*16 + 1
				}
				n = min(n, len(rest))
				if _, err := w.Write(rest[:n]); err != nil {
					return err
				}
				rest = rest[n:]
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if !bytes.Equal(fake.objects["k"], want) {
			t.Fatalf("stored %d bytes differ from the %d written", len(fake.objects["k"]), size)
		}
		wantParts := 0
		if size > MinPartSize {
			wantParts = (size + MinPartSize - 1) / MinPartSize
		}
		if res.Parts != wantParts || res.Multipart != (wantParts > 0) || res.Bytes != int64(size) {
			t.Fatalf("result %+v for %d bytes, want %d parts", res, size, wantParts)
		}
		if u.liveBuffers.Load() != 0 {
			t.Fatalf("buffers still held after Stream: %d bytes", u.liveBuffers.Load())
		}
	})
}
