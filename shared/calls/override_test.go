package calls

import (
	"net/url"
	"testing"
)

// TestMethodOverrideNames: every name PHP or Rails reads as the _method
// key is refused, in any case; names that only start alike are not.
func TestMethodOverrideNames(t *testing.T) {
	for _, k := range []string{"_method", "_METHOD", "_Method", "_method[]", "_method[x]", "_METHOD[]", "_method.x", "_Method.", "_method["} {
		if !hasMethodOverride(url.Values{k: {"DELETE"}}) {
			t.Errorf("%q is not refused", k)
		}
	}
	for _, k := range []string{"method", "_methods", "_method_x", "x_method", "_metho", "[_method]", "_meth\u212aod"} {
		if hasMethodOverride(url.Values{k: {"DELETE"}}) {
			t.Errorf("%q is refused", k)
		}
	}
}
