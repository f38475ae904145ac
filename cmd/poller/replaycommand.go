package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/ops"
)

// replayOptions reads poller replay's flags; an error names the flag.
func (c *command) replayOptions() (ops.ReplayOptions, error) {
	o := c.opts
	r := ops.ReplayOptions{Stream: o.stream, Topic: o.topic, ToStream: o.toStream, ToTopic: o.toTopic, ToAddress: o.toAddress,
		Append: o.appendTarget, IncludeErrors: o.includeErrors, Parallel: o.parallel, ChunkMessages: o.chunkMessages, JSON: o.json}
	if o.parallel < 1 {
		return r, fmt.Errorf("-parallel %d: want at least 1", o.parallel)
	}
	if o.chunkMessages < 1 {
		return r, fmt.Errorf("-chunk-messages %d: want at least 1", o.chunkMessages)
	}
	if o.partitions != "" {
		r.Partitions = []uint32{}
		for _, f := range strings.Split(o.partitions, ",") {
			p, err := strconv.ParseUint(strings.TrimSpace(f), 10, 32)
			if err != nil {
				return r, fmt.Errorf("-partitions %q: %q is not a partition id (want e.g. 0,2,5)", o.partitions, f)
			}
			if slices.Contains(r.Partitions, uint32(p)) {
				return r, fmt.Errorf("-partitions %q: %d is named twice", o.partitions, p)
			}
			r.Partitions = append(r.Partitions, uint32(p))
		}
	}
	for _, f := range []struct {
		name, v string
		dst     **uint64
	}{{"from-offset", o.fromOffset, &r.FromOffset}, {"to-offset", o.toOffset, &r.ToOffset}} {
		if f.v == "" {
			continue
		}
		n, err := strconv.ParseUint(f.v, 10, 64)
		if err != nil {
			return r, fmt.Errorf("-%s %q: want an offset (a whole number from 0)", f.name, f.v)
		}
		*f.dst = &n
	}
	if r.FromOffset != nil && r.ToOffset != nil && *r.FromOffset > *r.ToOffset {
		return r, fmt.Errorf("-from-offset %d is after -to-offset %d", *r.FromOffset, *r.ToOffset)
	}
	var err error
	if r.Since, err = ops.ParseReplayTime("-since", o.since); err != nil {
		return r, err
	}
	if r.Until, err = ops.ParseReplayTime("-until", o.until); err != nil {
		return r, err
	}
	if o.generation != "" {
		g, err := strconv.ParseUint(o.generation, 10, 32)
		if err != nil {
			return r, fmt.Errorf("-generation %q: want a generation number (0 for the first incarnation)", o.generation)
		}
		g32 := uint32(g)
		r.Generation = &g32
	}
	return r, nil
}
