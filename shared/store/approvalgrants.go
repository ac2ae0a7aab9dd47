package store

import (
	"context"
	"time"

	"github.com/countersign/countersign"
)

// Counts keeps the velocity counts (escalate[] rate rules): one count per
// key, which the caller makes per credential, endpoint, rule and window.
type Counts interface {
	// AddCount adds one to key's count, atomically, and returns the count
	// with it: however many writers add at once, each gets a different
	// count. until is when the store may delete the count (TTL); callers put
	// the window in the key, so a key is not counted again after until.
	AddCount(ctx context.Context, key string, until time.Time) (int64, error)
}

// ApprovalGrants keeps the remembered approvals
// (countersign.ApprovalGrant). Every read of a grant is consistent, so a
// grant revoked on one instance covers no call on any other; on DynamoDB a
// use is one Query and one conditional UpdateItem, never a scan.
type ApprovalGrants interface {
	// CreateApprovalGrant stores a new grant; ErrConflict if its ID exists.
	CreateApprovalGrant(ctx context.Context, g *countersign.ApprovalGrant) error
	// UseApprovalGrant takes one call from a grant of the credential for
	// the endpoint (connection, method, path template) that is live at
	// now (countersign.ApprovalGrant.Live), in one conditional write: of
	// any number of racing users, at most CallsLeft succeed. It returns the
	// grant as it is after the use, or ErrNotFound when no grant covers
	// the call. Of several, the one that ends first is used.
	UseApprovalGrant(ctx context.Context, credential, connection, method, endpoint string, now time.Time) (*countersign.ApprovalGrant, error)
	// ApprovalGrantsOf returns the credential's grants, spent and expired
	// ones included until they are deleted, ordered by ID.
	ApprovalGrantsOf(ctx context.Context, credential string) ([]*countersign.ApprovalGrant, error)
	// ListApprovalGrants returns a page of every credential's grants
	// (operators), ordered by ID (q's Status and Newest do not apply). On
	// DynamoDB the list comes from an eventually consistent index; each
	// listed grant is read consistently.
	ListApprovalGrants(ctx context.Context, q countersign.ListQuery) (countersign.Page[*countersign.ApprovalGrant], error)
	// DeleteApprovalGrant deletes the grant (revocation) and returns it;
	// ErrNotFound if there is none.
	DeleteApprovalGrant(ctx context.Context, id string) (*countersign.ApprovalGrant, error)
}
