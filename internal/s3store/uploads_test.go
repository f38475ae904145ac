package s3store

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// AbortUploads aborts every upload still open for the key, and only for
// that key (not for a longer key that shares it as a prefix).
func TestAbortUploads(t *testing.T) {
	for _, store := range realStores {
		t.Run(store.name, func(t *testing.T) {
			st, u := startOn(t, store.start, Options{})
			ctx := context.Background()
			for _, key := range []string{"a/k", "a/k", "a/k-longer"} {
				if _, err := st.direct.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
					t.Fatal(err)
				}
			}
			n, err := u.AbortUploads(ctx, "a/k")
			if err != nil || n != 2 {
				t.Fatalf("AbortUploads = %d, %v; want the key's 2", n, err)
			}
			if left := st.openUploads(t); left != 1 {
				t.Fatalf("%d uploads open, want the longer key's one", left)
			}
			if n, err := u.AbortUploads(ctx, "a/k"); err != nil || n != 0 {
				t.Fatalf("again: %d, %v; want nothing to abort", n, err)
			}
		})
	}
}

// AbortRule finds a rule that aborts incomplete uploads under the prefix,
// and says there is none when the bucket has no rule or only others. Of
// the stores here only moto_server keeps such a rule: versitygw keeps no
// lifecycle configuration, and MinIO drops AbortIncompleteMultipartUpload
// from a rule (it expires stale uploads by itself, after 24 h by default).
func TestAbortRule(t *testing.T) {
	for _, store := range []struct {
		name  string
		start func(testing.TB) *testenv.S3
		keeps bool
	}{{"versitygw", testenv.StartVersity, false}, {"minio", testenv.StartMinIO, false}, {"moto_server", startMotoS3, true}} {
		t.Run(store.name, func(t *testing.T) {
			st, u := startOn(t, store.start, Options{})
			ctx := context.Background()
			if _, _, found, err := u.AbortRule(ctx, "archive/"); found || (err != nil && store.name != "versitygw") {
				t.Fatalf("no rules yet: found %v, %v", found, err)
			}
			if store.name == "versitygw" {
				return // nothing to put a rule into
			}
			put := func(prefix string) {
				_, err := st.direct.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(bucket),
					LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{{
						ID: aws.String("abort"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String(prefix)},
						AbortIncompleteMultipartUpload: &types.AbortIncompleteMultipartUpload{DaysAfterInitiation: aws.Int32(1)},
						Expiration:                     &types.LifecycleExpiration{Days: aws.Int32(3650)}, // MinIO refuses a rule without one
					}}}})
				if err != nil {
					t.Fatalf("put a rule for %q: %v", prefix, err)
				}
			}
			put("other/")
			if _, _, found, err := u.AbortRule(ctx, "archive/"); err != nil || found {
				t.Fatalf("a rule for another prefix: found %v, %v", found, err)
			}
			put("")
			id, days, found, err := u.AbortRule(ctx, "archive/")
			if err != nil || found != store.keeps || (found && (id != "abort" || days != 1)) {
				t.Fatalf("a rule for the whole bucket: %q %d found %v, %v; want found %v", id, days, found, err, store.keeps)
			}
		})
	}
}
