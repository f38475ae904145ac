// Command samlocal is the Go half of scripts/sam-local.sh: it produces
// messages with headers into an Iggy 0.8 topic, recording each one in a
// manifest for the independent checker, and relays TCP to an Iggy server
// that the function's container cannot reach by itself.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	log.SetOutput(io.Discard) // the SDK's chatter about cluster metadata
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "samlocal:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: samlocal produce|relay [flags]")
	}
	switch args[0] {
	case "produce":
		return runProduce(ctx, args[1:], stdout)
	case "relay":
		return runRelay(ctx, args[1:], stdout)
	}
	return fmt.Errorf("unknown command %q: want produce or relay", args[0])
}

func runProduce(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("produce", flag.ContinueOnError)
	var s Spec
	fs.StringVar(&s.Addr, "addr", "127.0.0.1:8090", "Iggy TCP address")
	fs.StringVar(&s.User, "user", "iggy", "Iggy user")
	fs.StringVar(&s.Password, "password", "iggy", "Iggy password")
	fs.StringVar(&s.Stream, "stream", "sample", "stream (created when missing)")
	fs.StringVar(&s.Topic, "topic", "events", "topic (created when missing)")
	fs.IntVar(&s.Partitions, "partitions", 3, "partitions of the topic; messages go to every one")
	fs.IntVar(&s.Messages, "messages", 50, "messages per partition")
	fs.IntVar(&s.Wave, "wave", 1, "wave number, part of every payload")
	manifest := fs.String("manifest", "", "JSON-lines file the sent messages are appended to (required)")
	timeout := fs.Duration("timeout", 30*time.Second, "deadline for the whole run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *manifest == "" {
		return errors.New("produce: -manifest is required")
	}
	f, err := os.OpenFile(*manifest, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	n, err := Produce(ctx, s, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "produced %d messages with headers into %s/%s, %d partitions (wave %d)\n", n, s.Stream, s.Topic, s.Partitions, s.Wave)
	return nil
}

func runRelay(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	listen := fs.String("listen", "", "address to listen on, e.g. the docker bridge gateway:8090")
	to := fs.String("to", "", "address to relay to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *listen == "" || *to == "" {
		return errors.New("relay: -listen and -to are required")
	}
	r, err := StartRelay(*listen, *to)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "relaying %s -> %s\n", r.Addr(), *to)
	<-ctx.Done()
	return r.Close()
}
