//go:build !standins

package main

import (
	"context"
	"fmt"
	"io"
)

// The demo's and make local's stand-ins (the in-repo Iggy broker, an
// in-memory S3, moto_server and versitygw started as processes) are test
// machinery: the poller users run links them only when built with
// -tags standins, as make demo and make local build it.

func demo(context.Context, io.Writer) error { return errNoStandins("demo") }

func (c *command) local(context.Context) int {
	fmt.Fprintln(c.stderr, "local:", errNoStandins("local"))
	return 1
}

func errNoStandins(cmd string) error {
	return fmt.Errorf("this poller is built without the stand-ins %s starts (a test Iggy broker and S3): run make %s, or go run -tags standins ./cmd/poller %s", cmd, cmd, cmd)
}
