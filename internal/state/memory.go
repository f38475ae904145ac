package state

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Memory is a Store in process memory with the same conditions as Dynamo; for tests and demos.
type Memory struct {
	now   func() time.Time
	mu    sync.Mutex
	items map[string]State
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty store; now == nil means time.Now. Safe for concurrent use.
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, items: map[string]State{}}
}

// Acquire implements Store.
func (m *Memory) Acquire(ctx context.Context, key Key, owner string, ttl time.Duration) (State, error) {
	if err := checkAcquire(key, owner, ttl); err != nil {
		return State{}, err
	}
	if err := ctx.Err(); err != nil {
		return State{}, fmt.Errorf("state: acquire %s: %w", key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now().UnixMilli()
	cur, ok := m.items[key.ID()]
	if ok && cur.Owner != "" && cur.Owner != owner && cur.LeaseExpires.UnixMilli() > now {
		return State{}, heldError(key, cur.Owner, cur.LeaseExpires)
	}
	cur.Key = key
	cur.Owner = owner
	return m.store(cur, now, ttl), nil
}

// store bumps the version, stamps the times and saves; m.mu must be held.
func (m *Memory) store(s State, now int64, ttl time.Duration) State {
	s.Version++
	s.UpdatedAt = msTime(now)
	if ttl > 0 {
		s.LeaseExpires = msTime(now + ttl.Milliseconds())
	}
	m.items[s.Key.ID()] = s.clone()
	return s.clone()
}

// held returns the stored state if s still holds the lease at its version; m.mu must be held.
func (m *Memory) held(op string, s State) (State, error) {
	cur, ok := m.items[s.Key.ID()]
	if !ok || cur.Owner != s.Owner || cur.Version != s.Version {
		return State{}, lostError(op, s, cur, ok)
	}
	return cur, nil
}

// SetIntent implements Store.
func (m *Memory) SetIntent(ctx context.Context, s State, in Intent, ttl time.Duration) (State, error) {
	return m.update(ctx, "set intent", s, ttl, func() error { return checkSetIntent(s, in, ttl) }, setIntent(in))
}

// Complete implements Store.
func (m *Memory) Complete(ctx context.Context, s State, d Done, ttl time.Duration) (State, error) {
	return m.update(ctx, "complete", s, leaseAfter(d, ttl), func() error { return checkComplete(s, d, ttl) }, complete(d))
}

// Abandon implements Store.
func (m *Memory) Abandon(ctx context.Context, s State, ttl time.Duration) (State, error) {
	return m.update(ctx, "abandon", s, ttl, func() error { return checkAbandon(s, ttl) }, abandon)
}

// Skip implements Store.
func (m *Memory) Skip(ctx context.Context, s State, lastWritten, gapMessages uint64, ttl time.Duration) (State, error) {
	return m.update(ctx, "skip", s, ttl, func() error { return checkSkip(s, lastWritten, ttl) }, skip(lastWritten, gapMessages))
}

// Adopt implements Store.
func (m *Memory) Adopt(ctx context.Context, s State, incarnation uint64, ttl time.Duration) (State, error) {
	return m.update(ctx, "adopt", s, ttl, func() error { return checkIncarnation("adopt", s, incarnation, ttl) }, adopt(incarnation))
}

// Reset implements Store.
func (m *Memory) Reset(ctx context.Context, s State, incarnation uint64, generation uint32, ttl time.Duration) (State, error) {
	return m.update(ctx, "reset", s, ttl, func() error { return checkReset(s, incarnation, generation, ttl) }, reset(incarnation, generation))
}

// CarryOver implements Store.
func (m *Memory) CarryOver(ctx context.Context, s State, from Carried, ttl time.Duration) (State, error) {
	return m.update(ctx, "carry over", s, ttl, func() error { return checkCarryOver(s, from, ttl) }, carryOver(from))
}

// Renew implements Store.
func (m *Memory) Renew(ctx context.Context, s State, ttl time.Duration) (State, error) {
	return m.update(ctx, "renew", s, ttl, func() error { return checkHeld("renew", s, ttl) }, renew)
}

// update checks s, then applies the change if s still holds the lease at its version and the stored
// intent is the one s shows (Dynamo's conditions, item for item).
func (m *Memory) update(ctx context.Context, op string, s State, ttl time.Duration, check func() error, apply func(*State)) (State, error) {
	if err := check(); err != nil {
		return State{}, err
	}
	if err := ctx.Err(); err != nil {
		return State{}, fmt.Errorf("state: %s %s: %w", op, s.Key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, err := m.held(op, s)
	if err != nil {
		return State{}, err
	}
	if op != "renew" && !sameIntent(cur.Intent, s.Intent) {
		return State{}, intentMismatch(op, s)
	}
	apply(&cur)
	return m.store(cur, m.now().UnixMilli(), ttl), nil
}

// Release implements Store.
func (m *Memory) Release(ctx context.Context, s State) error {
	if s.Owner == "" {
		return nil
	}
	if err := s.Key.Validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("state: release %s: %w", s.Key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, err := m.held("release", s)
	if errors.Is(err, ErrStale) {
		return err
	}
	if err != nil {
		logReleaseLost(ctx, s, err)
		return nil
	}
	release(&cur)
	m.store(cur, m.now().UnixMilli(), 0)
	return nil
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, key Key) (State, bool, error) {
	if err := key.Validate(); err != nil {
		return State{}, false, err
	}
	if err := ctx.Err(); err != nil {
		return State{}, false, fmt.Errorf("state: get %s: %w", key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.items[key.ID()]
	return cur.clone(), ok, nil
}

func sameIntent(a, b *Intent) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
