// Package bench compares countersign's decision (shared/policy) with the same
// policy decided by OPA (a prepared Rego query) and by cedar-go.
//
// It is a module of its own, so the product never depends on what it is
// compared with. Load reads one configuration directory exactly as the
// server does (shared/config.Load) and builds the three engines from it:
//
//   - Countersign: policy.Evaluate, the router and the decision in one call.
//   - OPA: countersign's router maps the concrete path to its endpoint
//     template, then a prepared Rego query (policy/countersign.rego, with the
//     endpoints as a generated data module) decides.
//   - Cedar: countersign's router maps the path (Cedar cannot match path
//     templates), then cedar-go decides on (principal, action, resource =
//     endpoint, context) with policy/countersign.cedar and the generated
//     per-connection policies (thresholds, delegation).
//
// An unknown path is refused by the router before either engine is asked.
// Mix is the call mix; the agreement test checks that the three engines give
// the same Result on every call of it, and BenchmarkDecide times each.
package bench
