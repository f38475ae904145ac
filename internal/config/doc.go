// Package config loads the sink's configuration: the upstream Iggy S3 connector
// TOML file plus the sink's additions, overridden by environment variables, validated once.
package config
