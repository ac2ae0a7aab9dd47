package calls

import "context"

// resourceKey carries the resource a request is for.
type resourceKey struct{}

// ForResource marks ctx as a request to the resource at path ("/mcp"; ""
// is the JSON API, the default): Authenticate accepts an OAuth access
// token there only when it was issued for that resource (its audience,
// RFC 8707), so a token a client got for /mcp does not call /v1 and one
// for the JSON API does not call /mcp.
func ForResource(ctx context.Context, path string) context.Context {
	return context.WithValue(ctx, resourceKey{}, path)
}

// resourceOf is the resource ForResource marked, "" (the JSON API) when none.
func resourceOf(ctx context.Context) string {
	p, _ := ctx.Value(resourceKey{}).(string)
	return p
}
