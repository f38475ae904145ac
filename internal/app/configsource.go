package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
)

// configFetchTimeout bounds reading a configuration file from S3 or SSM.
const configFetchTimeout = 30 * time.Second

// maxConfigSize is the largest configuration file read from S3 (SSM's
// advanced parameters hold 8 KB).
const maxConfigSize = 1 << 20

// LoadConfig loads the configuration as both binaries do: the TOML file
// named by ref, then the environment over it. ref is a file path (relative
// paths are taken from base when it is set: the Lambda's package
// directory), s3://bucket/key, or ssm:/parameter-name (a String or
// SecureString parameter); "" means no file. env is usually os.LookupEnv.
func LoadConfig(ctx context.Context, ref, base string, env func(string) (string, bool)) (*config.Config, error) {
	ref = strings.TrimSpace(ref)
	switch {
	case ref == "":
		return config.Load("", env)
	case strings.HasPrefix(ref, "s3://"):
		data, err := fetchS3Config(ctx, ref, env)
		if err != nil {
			return nil, err
		}
		return config.LoadBytes(data, ref, env)
	case strings.HasPrefix(ref, "ssm:"):
		data, err := fetchSSMConfig(ctx, ref, env)
		if err != nil {
			return nil, err
		}
		return config.LoadBytes(data, ref, env)
	}
	path := ref
	if base != "" && !filepath.IsAbs(path) {
		path = filepath.Join(base, path)
	}
	if _, err := os.Stat(path); err != nil && base != "" {
		return nil, fmt.Errorf("config: configuration file %q (SINK_CONFIG) is not in the function's package: build with CONFIG_FILE=%s sam build so that it is bundled, or use s3://bucket/key or ssm:/name: %w", ref, ref, err)
	}
	return config.Load(path, env)
}

// fetchS3Config reads s3://bucket/key with the default AWS credentials and
// region, or the sink's own S3 settings from the environment when they are
// set (SINK_ENDPOINT, SINK_ACCESS_KEY_ID / SINK_SECRET_ACCESS_KEY,
// SINK_REGION): the file often lives in the store the sink writes to.
func fetchS3Config(ctx context.Context, ref string, env func(string) (string, bool)) ([]byte, error) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(ref, "s3://"), "/")
	if bucket == "" || key == "" {
		return nil, fmt.Errorf("config: SINK_CONFIG %q: want s3://bucket/key", ref)
	}
	get := func(name string) string { v, _ := env(name); return strings.TrimSpace(v) }
	region := get("SINK_REGION")
	if region == "" {
		region = firstNonEmpty(get("AWS_REGION"), get("AWS_DEFAULT_REGION"))
	}
	client, err := s3store.NewClient(ctx, s3store.ClientOptions{
		Region: region, Endpoint: get("SINK_ENDPOINT"),
		AccessKeyID: get("SINK_ACCESS_KEY_ID"), SecretAccessKey: get("SINK_SECRET_ACCESS_KEY"),
	})
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %w", ref, err)
	}
	ctx, cancel := context.WithTimeout(ctx, configFetchTimeout)
	defer cancel()
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("config: read configuration file %s (SINK_CONFIG): %w", ref, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, maxConfigSize+1))
	if err != nil {
		return nil, fmt.Errorf("config: read configuration file %s (SINK_CONFIG): %w", ref, err)
	}
	if len(data) > maxConfigSize {
		return nil, fmt.Errorf("config: configuration file %s (SINK_CONFIG) is larger than %d bytes", ref, maxConfigSize)
	}
	return data, nil
}

// fetchSSMConfig reads ssm:/name (decrypted when it is a SecureString).
func fetchSSMConfig(ctx context.Context, ref string, env func(string) (string, bool)) ([]byte, error) {
	name := strings.TrimPrefix(ref, "ssm:")
	if name == "" || name == "/" {
		return nil, fmt.Errorf("config: SINK_CONFIG %q: want ssm:/parameter-name", ref)
	}
	region := ""
	if v, ok := env("AWS_REGION"); ok {
		region = strings.TrimSpace(v)
	}
	opts := []func(*awsconfig.LoadOptions) error{}
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	ctx, cancel := context.WithTimeout(ctx, configFetchTimeout)
	defer cancel()
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("config: read %s: aws configuration: %w", ref, err)
	}
	out, err := ssm.NewFromConfig(awsCfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("config: read configuration parameter %s (SINK_CONFIG): %w", ref, err)
	}
	if out.Parameter == nil || out.Parameter.Value == nil {
		return nil, fmt.Errorf("config: configuration parameter %s (SINK_CONFIG) has no value", ref)
	}
	return []byte(*out.Parameter.Value), nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
