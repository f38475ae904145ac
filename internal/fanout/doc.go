// Package fanout scales a scheduled drain past one Lambda invocation: it
// sizes a cohort of workers from the lag and a measured drain rate, tells
// them how to find each other, and settles their consumer-group membership
// on an even split before any of them drains.
//
// Iggy 0.8 assigns partitions cooperatively on join (a member joining a
// group whose partitions are all owned receives at most one), but deals
// them round-robin over the remaining members when one leaves. A cohort
// therefore gathers behind an anchor: an extra member that the coordinator
// joins first, so that it holds every partition while the workers join,
// and that leaves once they have all joined. Its leave deals the partitions
// evenly; workers wait for it before the drain probes which partitions are
// theirs.
package fanout
