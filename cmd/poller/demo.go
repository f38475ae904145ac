//go:build standins

package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"sort"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/ops"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// demoSettings is the demo's whole configuration, as a user would set it in
// the environment.
func demoSettings(iggyAddr, s3URL string) map[string]string {
	return map[string]string{
		"IGGY_ADDRESS":               iggyAddr,
		"SINK_STREAM":                "demo",
		"SINK_TOPICS":                "app-logs",
		"SINK_CONSUMER_GROUP":        "s3-sink-demo",
		"SINK_BUCKET":                "iggy-archive",
		"SINK_PREFIX":                "iggy",
		"SINK_REGION":                "us-east-1",
		"SINK_ENDPOINT":              s3URL,
		"SINK_ACCESS_KEY_ID":         "demo",
		"SINK_SECRET_ACCESS_KEY":     "demo-secret",
		"SINK_PATH_TEMPLATE":         "{stream}/{topic}/dt={date}/hour={hour}",
		"SINK_FILE_ROTATION":         "messages",
		"SINK_MAX_MESSAGES_PER_FILE": "400",
		"SINK_INCLUDE_HEADERS":       "true",
		"SINK_MAX_FILE_AGE":          "1s",
	}
}

func demo(ctx context.Context, out io.Writer) error {
	broker, err := iggytest.Start(iggytest.WithLogger(slog.New(slog.DiscardHandler)), iggytest.WithProtocol(iggytest.Protocol09))
	if err != nil {
		return fmt.Errorf("start the built-in Iggy broker: %w", err)
	}
	defer broker.Close()
	const partitions, messages = 4, 1800
	if err := broker.Seed("demo", "app-logs", partitions, messages); err != nil {
		return fmt.Errorf("seed sample traffic: %w", err)
	}

	backend := s3mem.New()
	if err := backend.CreateBucket("iggy-archive"); err != nil {
		return err
	}
	s3srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer s3srv.Close()

	settings := demoSettings(broker.Addr(), s3srv.URL)
	cfg, err := config.Load("", func(k string) (string, bool) { v, ok := settings[k]; return v, ok })
	if err != nil {
		return err
	}
	s, err := app.New(ctx, cfg, app.Options{State: state.NewMemory(nil), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "iggy-s3-sink demo\n=================\n\n")
	fmt.Fprintf(out, "A built-in Iggy broker speaking Iggy 0.9's protocol listens on %s with stream %q, topic %q: %d partitions, %d JSON messages with headers.\n",
		broker.Addr(), "demo", "app-logs", partitions, messages)
	fmt.Fprintf(out, "An in-process S3 server listens on %s with bucket %q. The sink's state lives in memory.\n\n", s3srv.URL, "iggy-archive")
	fmt.Fprintf(out, "Run 1: drain through consumer group %q, rotating every %d messages (json_lines)...\n", "s3-sink-demo", cfg.Plugin.MaxMessagesPerFile)
	sum, err := s.Run(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  connected with iggy.protocol = auto: the server speaks %s\n", sum.Iggy)
	fmt.Fprintf(out, "  wrote %d objects, %d messages, %d bytes in %d ms\n", sum.Objects, sum.Messages, sum.Bytes, sum.DurationMS)
	for _, p := range sum.Partitions {
		if p.Pending > 0 {
			fmt.Fprintf(out, "  partition %d: %d messages wait for a full object or for max_file_age (%s)\n", p.Partition, p.Pending, cfg.Plugin.MaxFileAge)
		}
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-sleep(cfg.Plugin.MaxFileAge):
	}
	fmt.Fprintf(out, "\nRun 2, %s later: the partial objects are now due and are written too...\n", cfg.Plugin.MaxFileAge)
	sum, err = s.Run(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  wrote %d objects, %d messages, %d bytes\n\n", sum.Objects, sum.Messages, sum.Bytes)

	var keys []string
	err = s.Objects.List(ctx, "", func(k string, _ int64) error { keys = append(keys, k); return nil })
	if err != nil {
		return err
	}
	sort.Strings(keys)
	fmt.Fprintf(out, "Objects in s3://iggy-archive (key = prefix/path_template/partition-first-last.ext):\n")
	for _, k := range keys {
		body, err := s.Objects.Get(ctx, k)
		if err != nil {
			return err
		}
		if zr, err := gzip.NewReader(bytes.NewReader(body)); err == nil {
			body, _ = io.ReadAll(zr)
		}
		first, _, _ := bytes.Cut(body, []byte("\n"))
		fmt.Fprintf(out, "  %s  (%d lines)\n", k, bytes.Count(body, []byte("\n")))
		if len(first) > 160 {
			first = append(first[:157:157], "..."...)
		}
		fmt.Fprintf(out, "    %s\n", first)
	}
	fmt.Fprintf(out, "\nAudit (every partition's objects are contiguous, do not overlap, and reach the committed offset):\n")
	if err := ops.NewAuditor(s, slog.New(slog.DiscardHandler)).Write(ctx, indent{out}, ops.AuditOptions{}); err != nil {
		return err
	}
	fmt.Fprintf(out, `
Each object was recorded as an intent in the state store, uploaded, marked written, and only then
committed to the consumer group — so a crash at any point is repeated, never lost or duplicated.
Next, the same with real servers on this machine: "make local" (the README's "Local testing");
then your own Iggy and S3: "Quick start on AWS".
`)
	return nil
}

type indent struct{ w io.Writer }

func (i indent) Write(p []byte) (int, error) {
	lines := bytes.SplitAfter(p, []byte("\n"))
	for _, l := range lines {
		if len(l) == 0 {
			continue
		}
		if _, err := i.w.Write(append([]byte("  "), l...)); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func sleep(d time.Duration) <-chan time.Time { return time.After(d) }
