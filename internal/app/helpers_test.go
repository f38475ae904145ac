package app

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func listInput(bucket string) *s3.ListObjectsV2Input {
	return &s3.ListObjectsV2Input{Bucket: aws.String(bucket)}
}

func listUploadsInput(bucket string) *s3.ListMultipartUploadsInput {
	return &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)}
}

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}
