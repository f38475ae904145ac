// Package app assembles a sink from its configuration: the AWS clients, the state
// store, the S3 store, the Iggy dialer, the transforms and the tables, once per process; it runs.
package app
