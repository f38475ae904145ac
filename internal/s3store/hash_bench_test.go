package s3store

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"testing"

	"github.com/zeebo/xxh3"
)

// BenchmarkHashes compares the hashes the uploader could keep of the bytes
// it sends, over one 8 MiB object (the default part size): CRC32C, which
// it sends and S3, MinIO and versitygw verify, runs on the CPU's CRC32
// instruction at tens of GB/s; MD5 (the ETag, kept only as the fallback for
// stores that verify no checksum) and SHA-256 (SigV4's payload hash, over
// plain HTTP only) below 2 GB/s. Compare with BenchmarkPutObject for the
// share of the upload path.
func BenchmarkHashes(b *testing.B) {
	body := randomBytes(3, 8<<20)
	for _, h := range []struct {
		name string
		new  func() hash.Hash
	}{
		{"md5", md5.New},
		{"sha1", sha1.New},
		{"sha256", sha256.New},
		{"crc32c", func() hash.Hash { return crc32.New(crc32.MakeTable(crc32.Castagnoli)) }},
		// CRC-64/NVME, the polynomial of S3's CRC64NVME checksum.
		{"crc64nvme", func() hash.Hash { return crc64.New(crc64.MakeTable(0x9a6c9329ac4bc9b5)) }},
		{"xxh3", func() hash.Hash { return xxh3.New() }},
	} {
		b.Run(h.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				d := h.new()
				d.Write(body)
				d.Sum(nil)
			}
		})
	}
}
