package main

import (
	"fmt"
	"strconv"
	"time"
)

// localBegan is when the command began: LOCAL_STARTED_AT (Unix seconds,
// as `date +%s.%N` prints them) when set, else now.
func localBegan(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return now, nil
	}
	secs, err := strconv.ParseFloat(v, 64)
	if err != nil || secs <= 0 {
		return time.Time{}, fmt.Errorf("LOCAL_STARTED_AT=%s: want the Unix time in seconds (`date +%%s.%%N`), as make local sets it; unset it to count from now", v)
	}
	t := time.Unix(0, int64(secs*1e9))
	if t.After(now) {
		return now, nil // another clock's reading, a little ahead
	}
	return t, nil
}

// readyMessage says how long the command took to be ready and, when builds
// came before, how much of it the servers took.
func readyMessage(total, servers time.Duration) string {
	if total-servers < 100*time.Millisecond {
		return fmt.Sprintf("ready in %.1fs", servers.Seconds())
	}
	return fmt.Sprintf("ready in %.1fs (builds and installs %.1fs, servers %.1fs)", total.Seconds(), (total - servers).Seconds(), servers.Seconds())
}
