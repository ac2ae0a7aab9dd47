package httpapi

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
)

// The operator's listings page through the store's indexes. A cursor
// handed out (next_cursor on the routes, the "more" links on the page) is
// the store's cursor sealed with the link signer for the listing it
// belongs to (purpose operator-cursor, valid cursorTTL): a cursor that was
// not made here, has expired, or belongs to another listing or filter is
// refused with 400 invalid_request before the store is asked.
const (
	purposeCursor = "operator-cursor"
	cursorTTL     = time.Hour
)

// listing names one listing and its filter, sealed into its cursors.
func listing(name string, q countersign.ListQuery) string {
	return name + "\x00" + string(q.Status) + "\x00" + strconv.FormatBool(q.Newest)
}

// sealCursor seals the store's cursor next for the listing; "" stays "".
func (o *Operator) sealCursor(name string, q countersign.ListQuery, next string) string {
	if next == "" {
		return ""
	}
	return o.Signer.Seal(purposeCursor, []byte(listing(name, q)+"\x00"+next), o.now().Add(cursorTTL))
}

// openCursor returns the store's cursor sealed in token for the listing.
func (o *Operator) openCursor(name string, q countersign.ListQuery, token string) (string, error) {
	if token == "" {
		return "", nil
	}
	b, err := o.Signer.Open(purposeCursor, token, o.now())
	if err != nil {
		return "", fault.New(fault.InvalidRequest, "the cursor is not valid (it was not made by this listing, or it expired after an hour); start again without it")
	}
	want := listing(name, q) + "\x00"
	rest, ok := strings.CutPrefix(string(b), want)
	if !ok || rest == "" {
		return "", fault.New(fault.InvalidRequest, "the cursor belongs to another listing or filter; start again without it")
	}
	return rest, nil
}

// listQuery reads a listing's query parameters: status, order
// (oldest or newest), limit (1 to countersign.MaxPageSize) and cursor.
// Anything else, or a bad value, is an invalid_request.
func (o *Operator) listQuery(name, raw string, statuses bool, defaultNewest bool) (countersign.ListQuery, error) {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return countersign.ListQuery{}, fault.New(fault.InvalidRequest, "malformed query string")
	}
	q := countersign.ListQuery{Newest: defaultNewest}
	for k, vs := range vals {
		if len(vs) != 1 {
			return q, fault.Errorf(fault.InvalidRequest, "query parameter %q is given %d times", k, len(vs))
		}
		v := vs[0]
		switch k {
		case "status":
			if !statuses {
				return q, fault.New(fault.InvalidRequest, "this listing has no status filter")
			}
			if !countersign.Status(v).Valid() {
				return q, fault.Errorf(fault.InvalidRequest, "status %q is not a confirmation status", v)
			}
			q.Status = countersign.Status(v)
		case "order":
			if !statuses {
				return q, fault.New(fault.InvalidRequest, "this listing has one order")
			}
			switch v {
			case "newest":
				q.Newest = true
			case "oldest":
				q.Newest = false
			default:
				return q, fault.New(fault.InvalidRequest, `order must be "newest" or "oldest"`)
			}
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > countersign.MaxPageSize {
				return q, fault.Errorf(fault.InvalidRequest, "limit must be a number from 1 to %d", countersign.MaxPageSize)
			}
			q.Limit = n
		case "cursor":
			q.Cursor = v
		default:
			return q, fault.Errorf(fault.InvalidRequest, "unknown query parameter %q (status, order, limit, cursor)", k)
		}
	}
	q.Cursor, err = o.openCursor(name, q, q.Cursor)
	return q, err
}
