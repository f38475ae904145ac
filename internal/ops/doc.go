// Package ops holds what the operator's commands say of a sink without
// running it: render, the pending explanation, the effective settings, the stack's grants.
package ops
