package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/logging"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/ops"
)

// render is `poller render`: stdin messages to the object on stdout; what
// it did goes to stderr.
func (c *command) render(ctx context.Context) int {
	cfg, ok := c.loadConfig(ctx)
	if !ok {
		return 2
	}
	o := ops.RenderOptions{Envelope: c.opts.envelope, Stream: c.opts.stream, Topic: c.opts.topic,
		Partition: uint32(c.opts.partition), FirstOffset: c.opts.offset, Value: c.opts.value}
	if c.opts.at != "" {
		t, err := time.Parse(time.RFC3339Nano, c.opts.at)
		if err != nil {
			fmt.Fprintf(c.stderr, "poller render: -time %q: want RFC 3339, e.g. 2024-03-16T14:02:31Z\n", c.opts.at)
			return 2
		}
		o.Time = t
	}
	if f, ok := c.stdin.(*os.File); ok && logging.IsTerminal(f) {
		fmt.Fprintln(c.stderr, "poller render: reading messages from the terminal, one per line; end with Ctrl-D")
	}
	var errs bytes.Buffer
	if c.opts.errorsFile != "" {
		o.Errors = &errs
	}
	out := bufio.NewWriter(c.stdout)
	res, err := ops.Render(cfg, c.stdin, out, o)
	if err == nil {
		err = out.Flush()
	}
	if err == nil && c.opts.errorsFile != "" {
		err = os.WriteFile(c.opts.errorsFile, errs.Bytes(), 0o644)
	}
	if err != nil {
		fmt.Fprintln(c.stderr, "poller render:", err)
		return 1
	}
	fmt.Fprintf(c.stderr, "rendered %d messages into %d bytes: s3://%s/%s\n", res.Messages, res.Bytes, cfg.Plugin.Bucket, res.Key)
	switch {
	case res.Rejected > 0 && c.opts.errorsFile != "":
		fmt.Fprintf(c.stderr, "%d records could not be written and went to the error object s3://%s/%s (written to %s)\n", res.Rejected, cfg.Plugin.Bucket, res.ErrorsKey, c.opts.errorsFile)
	case res.Rejected > 0:
		fmt.Fprintf(c.stderr, "note: %d records could not be written and would go to the error object s3://%s/%s (-errors FILE writes it)\n", res.Rejected, cfg.Plugin.Bucket, res.ErrorsKey)
	case res.InvalidPayloads > 0:
		fmt.Fprintf(c.stderr, "note: %d payloads are not valid JSON and were kept as base64 strings (invalid_payload = %q)\n", res.InvalidPayloads, cfg.Plugin.InvalidPayload)
	}
	if len(res.Values) > 1 {
		others := make([]string, 0, len(res.Values)-1)
		for _, v := range res.Values {
			if v.Value != res.Value {
				others = append(others, fmt.Sprintf("%s (%d)", v.Value, v.Records))
			}
		}
		fmt.Fprintf(c.stderr, "note: this is the object of the value %s; the sink splits these messages into an object per value, also %s (-value picks one)\n", res.Value, strings.Join(others, ", "))
	}
	switch {
	case res.Objects > 1 && res.Values != nil:
		fmt.Fprintf(c.stderr, "note: the sink would cut these messages into %d units (rotation, max_partition_values); this is the value's records of all of them in one\n", res.Objects)
	case res.Objects > 1:
		fmt.Fprintf(c.stderr, "note: the sink would write these messages as %d objects (rotation); this is all of them in one\n", res.Objects)
	}
	return 0
}
