// Package ops is what the operator's commands say of a sink: the start-up checks, the audit
// and status, a sample rendered as the sink would, the pending explanation, the stack's grants.
package ops
