// Package devenv runs the local stand-ins behind `make local` (`poller local`):
// an S3 server, DynamoDB (moto_server) and the in-repo Iggy broker, on 127.0.0.1.
package devenv
