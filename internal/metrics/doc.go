// Package metrics renders a drain run's counters as CloudWatch Embedded Metric Format lines.
// Lambda ships stdout to CloudWatch Logs, which turns each line into metrics without API calls.
package metrics
