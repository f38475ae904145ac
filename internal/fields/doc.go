// Package fields splits records by the payload fields a path template
// names ({payload.<path>}): each record's value, and the manifest that
// lists the value objects of one unit.
package fields
