// Package metrics renders a drain run's counters as CloudWatch Embedded Metric Format lines,
// and EMF is the run hook that writes them (Lambda ships stdout to CloudWatch Logs as metrics).
package metrics
