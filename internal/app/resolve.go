package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// resolveTopics resolves every configured topic once on conn (the drain's
// own lookups then come from the connection's cache) and refuses a
// configuration that, resolved, would archive one topic twice or two topics
// under the same keys: a topic listed by name and by id, or ids whose names
// render to the same key segment. Topics that cannot be resolved are left
// to the run, which reports them per topic; a lost connection ends it.
func resolveTopics(ctx context.Context, conn *source.Conn, cfg *config.Config) ([]*source.Topic, error) {
	var topics []*source.Topic
	for _, st := range cfg.Streams {
		for _, name := range st.Topics {
			t, err := conn.Topic(ctx, st.Stream, name, st.ConsumerGroup)
			if errors.Is(err, source.ErrConnectionLost) {
				return nil, err
			}
			if err != nil {
				continue // the run reports it for this topic
			}
			topics = append(topics, t)
		}
	}
	if err := source.CheckDistinct(topics); err != nil {
		return nil, fmt.Errorf("configuration (streams.topics): %w", err)
	}
	pairs := make([]keys.Pair, len(topics))
	for i, t := range topics {
		pairs[i] = keys.Pair{Stream: t.Stream, Topic: t.Topic}
	}
	if ce := cfg.Plugin.Template.Collision(pairs); ce != nil {
		return nil, fmt.Errorf("configuration (streams.topics): %w; drain one of them with another sink (another prefix), or rename one", ce)
	}
	return topics, nil
}
