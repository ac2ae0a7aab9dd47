package countersign

import (
	"fmt"
)

// Page sizes of the listings (store.Store's List methods): a page holds
// at most MaxPageSize items, DefaultPageSize when the query does not say.
const (
	DefaultPageSize = 50
	MaxPageSize     = 100
)

// ListQuery asks for one page of a listing: confirmations, review items,
// credentials or audit chains. The store reads it from an index, never by
// scanning the table.
type ListQuery struct {
	// Status, for confirmations and review items, lists only those whose
	// stored status is this one ("" lists every status).
	Status Status
	// Newest lists from the newest down (confirmations and review items);
	// otherwise the oldest come first.
	Newest bool
	// Limit bounds the page: 1 to MaxPageSize; 0 means DefaultPageSize.
	Limit int
	// Cursor continues the listing after the previous page: that page's
	// Next, as the store returned it ("" starts at the beginning). A cursor
	// is only valid for the same listing (the same method, Status and
	// Newest); anything else is refused with store.ErrBadCursor.
	Cursor string
}

// PageSize is q's Limit with the default applied, or an error when it is
// out of range.
func (q ListQuery) PageSize() (int, error) {
	switch {
	case q.Limit == 0:
		return DefaultPageSize, nil
	case q.Limit < 0 || q.Limit > MaxPageSize:
		return 0, fmt.Errorf("page size %d: it must be between 1 and %d", q.Limit, MaxPageSize)
	}
	return q.Limit, nil
}

// Page is one page of a listing. Next continues it (ListQuery.Cursor);
// "" means this is the last page. A page may hold fewer than the limit
// (even none) and still have a Next: records listed by the index may have
// changed or gone by the time they are read.
type Page[T any] struct {
	Items []T
	Next  string
}
