// Package testenv starts the real local servers that integration tests talk
// to (versitygw and MinIO for S3, moto_server for DynamoDB) on 127.0.0.1 and stops them.
package testenv
