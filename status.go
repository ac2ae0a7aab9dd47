package countersign

// Status is the stored status of a confirmation. The effective status also
// depends on the clock (see confirm.Effective).
type Status string

// Confirmation statuses (docs/api.md, Confirmation status).
const (
	StatusPending           Status = "pending"
	StatusApproved          Status = "approved"
	StatusRejected          Status = "rejected"
	StatusExpired           Status = "expired"
	StatusRedeemed          Status = "redeemed"
	StatusExecuted          Status = "executed"
	StatusPartiallyExecuted Status = "partially_executed"
	StatusFailed            Status = "failed"
)

// AllStatuses lists every status, in order.
var AllStatuses = []Status{StatusPending, StatusApproved, StatusRejected,
	StatusExpired, StatusRedeemed, StatusExecuted, StatusPartiallyExecuted,
	StatusFailed}
