package s3store

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// Checksum modes (Options.Checksum).
const (
	// ChecksumCRC32C sends every body's CRC32C (x-amz-checksum-crc32c) for
	// the store to verify, and checks the store's echo of it. A store whose
	// reply carries no CRC32C did not verify it: the uploader then checks
	// that reply's ETag against the body's MD5 and uses MD5 for the rest of
	// its life (see Options.Checksum).
	ChecksumCRC32C = "crc32c"
	// ChecksumMD5 sends no checksum header and proves each upload by its MD5
	// ETag, for stores that refuse x-amz-checksum-* headers.
	ChecksumMD5 = "md5"
)

// castagnoli is CRC32C's table; crc32 uses the CPU's CRC32 instruction for
// it (SSE 4.2, ARMv8), many GB/s, where MD5 runs below 1 GB/s.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(data []byte) uint32 { return crc32.Checksum(data, castagnoli) }

// encodeCRC is the header form of a CRC32C: base64 of its 4 big-endian bytes.
func encodeCRC(sum uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], sum)
	return base64.StdEncoding.EncodeToString(b[:])
}

// partSum is what the uploader keeps of one request body it sent (the whole
// object of a PutObject, one part of a multipart upload): its size and
// CRC32C, and its MD5 when an ETag had to be checked against it.
type partSum struct {
	size   int64
	crc    uint32
	md5    [md5.Size]byte
	hasMD5 bool
}

func sumOf(data []byte) partSum { return partSum{size: int64(len(data)), crc: crc32c(data)} }

// checksums proves that the store took the bodies sent: by the CRC32C
// sent with each, until a store shows that it does not verify the header,
// and from then on, for every request of the uploader, by MD5 ETags. It is
// safe for concurrent use.
type checksums struct {
	// md5Only: requests carry no checksum header, replies are proved by
	// MD5 ETags (Options.Checksum, or the store ignored a CRC32C).
	md5Only atomic.Bool
	etags   etagCheck
	// bucket and log are for the warning of the fallback.
	bucket string
	log    *slog.Logger
}

// useCRC reports whether requests carry CRC32C checksums now.
func (cs *checksums) useCRC() bool { return !cs.md5Only.Load() }

// fallBackToMD5 switches the uploader to MD5 ETags for good, once, with a
// warning that says why and how to skip the probe.
func (cs *checksums) fallBackToMD5(ctx context.Context, op, key, why string) {
	if cs.md5Only.CompareAndSwap(false, true) {
		cs.log.WarnContext(ctx, "s3 store does not verify CRC32C checksums; proving uploads by MD5 ETags from now on (set checksum = \"md5\" to skip this probe)",
			"bucket", cs.bucket, "op", op, "key", key, "why", why)
	}
}

// checkBody accepts a PutObject or UploadPart reply only if it proves the
// store took the bytes. With a checksum sent, the reply must echo it; a
// reply without one means the store ignored the header, and its ETag is
// checked against the MD5 of data instead (the fallback). Without a
// checksum sent, the ETag must be data's MD5, unless SSE-KMS makes it opaque.
func (cs *checksums) checkBody(ctx context.Context, op, key string, r reply, sent bool, s *partSum, data []byte) error {
	if strings.Trim(aws.ToString(r.etag), `"`) == "" {
		return &badReplyError{status: replyStatus(r.meta), problem: "it has no ETag"}
	}
	if sent {
		got := aws.ToString(r.crc32c)
		if got != "" {
			if want := encodeCRC(s.crc); got != want {
				return &badReplyError{status: replyStatus(r.meta),
					problem: fmt.Sprintf("CRC32C %s is not the checksum of the %d bytes sent (%s)", quote(got), len(data), want)}
			}
			return nil
		}
		cs.fallBackToMD5(ctx, op, key, "the reply carries no x-amz-checksum-crc32c")
	}
	if !s.hasMD5 {
		s.md5, s.hasMD5 = md5.Sum(data), true
	}
	return cs.etags.check(r, s.md5, len(data))
}

// refusesChecksum reports whether err is a store refusing the checksum
// header itself (Backblaze B2: InvalidArgument "Unsupported header"), as
// opposed to a checksum that did not match (BadDigest and kin, which are
// corruption in transit and retried).
func refusesChecksum(err error) bool {
	if httpStatus(err) != 400 || checksumMismatch(err) {
		return false
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "InvalidArgument", "NotImplemented", "InvalidRequest":
		msg := strings.ToLower(apiErr.ErrorMessage())
		return strings.Contains(msg, "checksum") || strings.Contains(msg, "unsupported header")
	}
	return false
}

// checksumMismatch reports whether the store refused a body because it did
// not match the checksum or payload hash sent with it: bytes changed on the
// way, so a retry with the same bytes may succeed.
func checksumMismatch(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "BadDigest", "InvalidDigest", "XAmzContentChecksumMismatch", "XAmzContentSHA256Mismatch":
		return true
	}
	return false
}

// fullObjectCRC is the object's whole-body CRC32C as HeadObject reports it
// (ChecksumMode ENABLED), when the store keeps one: PutObject's, or a
// FULL_OBJECT multipart checksum. Composite ones ("…-N") are left out.
func fullObjectCRC(value *string, kind types.ChecksumType) (string, bool) {
	v := aws.ToString(value)
	if v == "" || strings.Contains(v, "-") || kind == types.ChecksumTypeComposite {
		return "", false
	}
	return v, true
}
