package main

import (
	"strings"
	"testing"
	"time"
)

func TestLocalBegan(t *testing.T) {
	now := time.Unix(1796475900, 0)
	tests := []struct {
		v       string
		want    time.Time
		wantErr string
	}{
		{v: "", want: now},
		{v: "1796475810.250000000", want: time.Unix(1796475810, 250_000_000)},
		{v: "1796475810", want: time.Unix(1796475810, 0)},
		{v: "1796476000.5", want: now}, // ahead of this clock: counts from now
		{v: "yesterday", wantErr: "LOCAL_STARTED_AT=yesterday: want the Unix time in seconds (`date +%s.%N`)"},
		{v: "-5", wantErr: "unset it to count from now"},
	}
	for _, tt := range tests {
		got, err := localBegan(tt.v, now)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("localBegan(%q) = %v, %v; want an error with %q", tt.v, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got.Sub(tt.want).Abs() > time.Microsecond {
			t.Errorf("localBegan(%q) = %v, %v; want %v", tt.v, got, err, tt.want)
		}
	}
}

func TestReadyMessage(t *testing.T) {
	if got := readyMessage(83*time.Second+400*time.Millisecond, 2100*time.Millisecond); got != "ready in 83.4s (builds and installs 81.3s, servers 2.1s)" {
		t.Errorf("after builds: %q", got)
	}
	if got := readyMessage(2150*time.Millisecond, 2100*time.Millisecond); got != "ready in 2.1s" {
		t.Errorf("servers only: %q", got)
	}
}
