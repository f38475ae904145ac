// Package app assembles a sink from its configuration: the AWS clients, the state
// store, the S3 store, the Iggy dialer and the transforms, once per process; it runs and audits.
package app
