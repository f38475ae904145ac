// Package childproc runs a server as a child process for the stand-ins and the tests:
// it keeps the server's output, waits for its HTTP answer and stops it by PID.
package childproc
