package state

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

func heldError(key Key, owner string, expires time.Time) error {
	if owner == "" { // the server did not return the old item
		return fmt.Errorf("%w: partition %s is held by another owner", ErrLeaseHeld, key)
	}
	return fmt.Errorf("%w: partition %s is held by %q until %s", ErrLeaseHeld, key, owner, expires.Format(time.RFC3339Nano))
}

// lostError says what the store holds now, so a log line explains why the run stopped.
func lostError(op string, s State, cur State, exists bool) error {
	if !exists {
		return fmt.Errorf("%w: %s %s: the state item does not exist (held version %d)", ErrLeaseLost, op, s.Key, s.Version)
	}
	if cur.Owner != s.Owner {
		holder := "nobody"
		if cur.Owner != "" {
			holder = fmt.Sprintf("%q", cur.Owner)
		}
		return fmt.Errorf("%w: %s %s: lease is now held by %s at version %d (we are %q at version %d)",
			ErrLeaseLost, op, s.Key, holder, cur.Version, s.Owner, s.Version)
	}
	return fmt.Errorf("%w: %w: %s %s: version moved from %d to %d", ErrLeaseLost, ErrStale, op, s.Key, s.Version, cur.Version)
}

func logReleaseLost(ctx context.Context, s State, err error) {
	slog.DebugContext(ctx, "state: release skipped, lease no longer ours", "key", s.Key.ID(), "owner", s.Owner, "err", err)
}

// intentMismatch: owner and version match but the stored intent is not the one in s, which the
// checks on s leave only for a State the caller edited.
func intentMismatch(op string, s State) error {
	return fmt.Errorf("%w: %s %s: stored intent does not match the state passed in", ErrLeaseLost, op, s.Key)
}
