// Package explain turns the errors of Iggy, S3 and DynamoDB into messages
// that say which setting to fix, for the runs and the operator's checks.
package explain
