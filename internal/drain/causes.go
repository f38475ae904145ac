package drain

// Why offsets are missing, as gap markers say it: a cause for the audit
// and a reason for people.
const (
	CauseRetention = "retention"
	CauseIggyHole  = "iggy_hole"
	CauseRecreated = "recreated"
	// CauseSkipped: the consumer group's offset was moved past offsets the
	// sink had not archived (an operator's choice); nothing was lost by
	// the sink, and the audit accepts the marker.
	CauseSkipped = "skipped"
	// CauseTooLarge: a message larger than max_poll_bytes, reported with
	// its offset instead of archived.
	CauseTooLarge = "too_large"
)

var gapReasons = map[string]string{
	CauseRetention: "deleted by Iggy (retention) before the sink read it",
	CauseIggyHole:  "never written: Iggy's offsets skip these numbers (a server recovery can leave such a hole); no message is missing",
	CauseRecreated: "deleted with the partition (it was re-created) before the sink wrote it",
	CauseSkipped:   "passed over: the consumer group's offset was moved past them before the sink archived them",
	CauseTooLarge:  "not archived: larger than max_poll_bytes, what one poll may take in; read it from Iggy by its offset",
}
