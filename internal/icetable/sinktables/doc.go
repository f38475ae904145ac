// Package sinktables wires a sink's Iceberg tables: after each run, one
// commit per table of what it archived. Built with -tags noiceberg it links no Iceberg.
package sinktables
