// Package faultproxy is a loopback reverse proxy that injects S3-style faults
// (5xx replies, connection resets, stalled responses, permanent 403) for tests.
package faultproxy
