// Package vsrconn is a client of Iggy 0.9 and 0.10 servers over their VSR protocol (see internal/iggy/vsr): dial, TLS,
// login, one request at a time with a deadline each, replies bounded before they are read, evictions as errors, keepalive pings.
//
// A 0.10 cluster's partition requests that a node refuses as not its
// primary are routed, once per partition, to the node the server's route
// names, if the cluster metadata lists it; the extra connection joins the
// same session (BindSession), so it is the same consumer-group member.
package vsrconn
