package ops

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
)

// loadEnv loads a configuration from variables alone, with the required
// ones filled in.
func loadEnv(t *testing.T, env map[string]string) *config.Config {
	t.Helper()
	base := map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "app", "SINK_TOPICS": "logs"}
	for k, v := range env {
		base[k] = v
	}
	cfg, err := config.Load("", func(k string) (string, bool) { v, ok := base[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func listInput(bucket string) *s3.ListObjectsV2Input {
	return &s3.ListObjectsV2Input{Bucket: aws.String(bucket)}
}

func listUploadsInput(bucket string) *s3.ListMultipartUploadsInput {
	return &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)}
}
