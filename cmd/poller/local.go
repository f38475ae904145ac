package main

import (
	"context"
	"fmt"
	"os"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/devenv"
)

// local is `poller local` (make local): the stand-ins until a signal.
func (c *command) local(ctx context.Context) int {
	fmt.Fprintln(c.stdout, "Starting S3, DynamoDB and an Iggy test broker on 127.0.0.1 ...")
	st, err := devenv.Start(ctx, devenv.Options{Log: c.log, IggyProtocol: os.Getenv("IGGY_BROKER_PROTOCOL")})
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
	st.Describe(c.stdout)
	fmt.Fprintf(c.stdout, "\nThe environment for the poller, also in %s:\n\n", envFile)
	for _, kv := range st.Env() {
		fmt.Fprintln(c.stdout, "  export "+kv)
	}
	fmt.Fprintf(c.stdout, `
In another terminal, in this directory:

  . ./%s
  go run ./cmd/poller once     # or: check, run, audit, status

ready in %.1fs; Ctrl-C stops the servers and removes %s.
`, envFile, st.Started.Seconds(), envFile)
	<-ctx.Done()
	fmt.Fprintln(c.stdout, "stopping: broker, moto_server, "+st.S3Kind)
	return 0
}
