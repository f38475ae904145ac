// Command testbroker serves the in-process Iggy test broker (0.8.0's legacy protocol,
// 0.9's and 0.10's VSR protocols) until SIGINT or SIGTERM, optionally seeded with
// sample JSON log messages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
)

type seedSpec struct {
	stream, topic        string
	partitions, messages int
}

type seedFlags []seedSpec

func (s *seedFlags) String() string { return fmt.Sprint(*s) }

// Set parses STREAM/TOPIC:PARTITIONS:MESSAGES.
func (s *seedFlags) Set(v string) error {
	spec, err := parseSeed(v)
	if err != nil {
		return err
	}
	*s = append(*s, spec)
	return nil
}

func parseSeed(v string) (seedSpec, error) {
	parts := strings.Split(v, ":")
	if len(parts) != 3 {
		return seedSpec{}, fmt.Errorf("seed %q: want STREAM/TOPIC:PARTITIONS:MESSAGES", v)
	}
	stream, topic, ok := strings.Cut(parts[0], "/")
	if !ok || stream == "" || topic == "" || strings.Contains(topic, "/") {
		return seedSpec{}, fmt.Errorf("seed %q: want STREAM/TOPIC before the first colon", v)
	}
	partitions, err := strconv.Atoi(parts[1])
	if err != nil || partitions < 1 || partitions > 1000 {
		return seedSpec{}, fmt.Errorf("seed %q: partitions must be 1..1000", v)
	}
	messages, err := strconv.Atoi(parts[2])
	if err != nil || messages < 0 {
		return seedSpec{}, fmt.Errorf("seed %q: messages must be a non-negative integer", v)
	}
	return seedSpec{stream: stream, topic: topic, partitions: partitions, messages: messages}, nil
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testbroker:", err)
		os.Exit(2)
	}
}

// run serves until ctx ends or a signal arrives; the listen address goes to stdout.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("testbroker", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "listen address")
	username := fs.String("username", "iggy", "root username")
	password := fs.String("password", "iggy", "root password")
	token := fs.String("token", "", "personal access token accepted by LoginWithPersonalAccessToken")
	verbose := fs.Bool("v", false, "log every request")
	protocol := fs.String("protocol", "", "serve only this Iggy release's protocol: 0.8, 0.9 or 0.10 (default: whatever each connection speaks)")
	var seeds seedFlags
	fs.Var(&seeds, "seed", "STREAM/TOPIC:PARTITIONS:MESSAGES to create and fill (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	opts := []iggytest.Option{iggytest.WithAddr(*addr), iggytest.WithUser(*username, *password), iggytest.WithLogger(log), iggytest.WithProtocol(*protocol)}
	if *token != "" {
		opts = append(opts, iggytest.WithToken(*token))
	}
	b, err := iggytest.Start(opts...)
	if err != nil {
		return err
	}
	for _, s := range seeds {
		if err := b.Seed(s.stream, s.topic, s.partitions, s.messages); err != nil {
			return errors.Join(err, b.Close())
		}
		log.Info("seeded", "stream", s.stream, "topic", s.topic, "partitions", s.partitions, "messages", s.messages)
	}
	fmt.Fprintln(stdout, b.Addr())
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	log.Info("shutting down")
	return b.Close()
}
