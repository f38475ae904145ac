//go:build standins

package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/devenv"
)

// local is `poller local` (make local): the stand-ins until a signal.
//
// LOCAL_S3 picks the S3 server (versitygw, or minio); LOCAL_STARTED_AT,
// which make local sets as its first step, is when the command began, so
// that "ready in" counts the builds and installs before the servers too.
func (c *command) local(ctx context.Context) int {
	began, err := localBegan(os.Getenv("LOCAL_STARTED_AT"), time.Now())
	if err != nil {
		fmt.Fprintln(c.stderr, "poller local:", err)
		return 2
	}
	s3 := os.Getenv("LOCAL_S3")
	if s3 != "" && s3 != devenv.Versitygw && s3 != devenv.MinIO {
		fmt.Fprintf(c.stderr, "poller local: LOCAL_S3=%s: want %s (the default) or %s; make local LOCAL_S3=%s builds MinIO first\n",
			s3, devenv.Versitygw, devenv.MinIO, devenv.MinIO)
		return 2
	}
	fmt.Fprintln(c.stdout, "Starting S3, DynamoDB and an Iggy test broker on 127.0.0.1 ...")
	st, err := devenv.Start(ctx, devenv.Options{Log: c.log, IggyProtocol: os.Getenv("IGGY_BROKER_PROTOCOL"), S3: s3, Progress: c.stdout})
	if err != nil {
		fmt.Fprintln(c.stderr, "poller local:", err)
		return 1
	}
	defer st.Close()
	envFile := c.opts.envFile
	if err := st.WriteEnvFile(envFile); err != nil {
		fmt.Fprintln(c.stderr, "poller local:", err)
		return 1
	}
	defer os.Remove(envFile)
	fmt.Fprintln(c.stdout)
	st.Describe(c.stdout)
	fmt.Fprintf(c.stdout, "\nThe environment for the poller, also in %s:\n\n", envFile)
	for _, kv := range st.Env() {
		fmt.Fprintln(c.stdout, "  export "+kv)
	}
	fmt.Fprintf(c.stdout, `
In another terminal, in this directory:

  . ./%s
  .bin/poller once     # or: check, run, audit, status (built without Iceberg; go run ./cmd/poller has it)

%s; Ctrl-C stops the servers and removes %s.
`, envFile, readyMessage(time.Since(began), st.Started), envFile)
	<-ctx.Done()
	fmt.Fprintln(c.stdout, "stopping: broker, moto_server, "+st.S3Kind)
	return 0
}
