package telemetry

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// kind is what an instrument measures.
type kind uint8

const (
	counter   kind = iota // a sum that only grows (Prometheus counter, EMF Count)
	histogram             // a distribution of values (Prometheus histogram, EMF values)
	gauge                 // a level that goes up and down (Prometheus gauge; not sent as EMF)
)

// maxLabels is how many labels an instrument may have; label values are
// passed as a fixed-size array so that recording allocates nothing when no
// sink is on.
const maxLabels = 4

type labels [maxLabels]string

// Metric is one instrument: its Prometheus name and its CloudWatch name,
// its unit, its labels and which label sets become CloudWatch dimensions.
type Metric struct {
	// Name is the Prometheus name, e.g. countersign_decisions_total.
	Name string
	// EMF is the CloudWatch metric name, e.g. Decisions.
	EMF string
	// Unit is the CloudWatch unit: Count or Seconds.
	Unit string
	// Help is the one-line description (Prometheus HELP, docs/observability.md).
	Help string
	// Labels are the Prometheus label names, in the order values are given.
	Labels []string
	// Dimensions are the CloudWatch dimension names of the labels, same order.
	Dimensions []string
	// DimensionSets are the CloudWatch dimension sets, as indexes into
	// Dimensions; an empty set is the metric without dimensions, which
	// the alarms use.
	DimensionSets [][]int
	// Buckets are a histogram's upper bounds in Unit.
	Buckets []float64

	kind kind
	mu   sync.Mutex
	// series holds the aggregated values by label values (Prometheus sink).
	series map[labels]*series
}

type series struct {
	value  float64  // counter, gauge
	counts []uint64 // histogram: one per bucket, then +Inf
	sum    float64
	count  uint64
}

// The sinks. Each is off until a process turns it on.
var (
	metricsOn atomic.Bool // any sink is on: the one check on the hot path
	promOn    atomic.Bool
	emfSink   atomic.Pointer[EMF]
)

// UsePrometheus turns the in-process registry on: every instrument keeps
// its values, which Handler serves in the Prometheus text format.
func UsePrometheus() {
	promOn.Store(true)
	metricsOn.Store(true)
}

// UseEMF writes every measurement as a CloudWatch Embedded Metric Format
// line (Lambda: stdout, which CloudWatch Logs reads). Nil turns it off.
func UseEMF(e *EMF) {
	emfSink.Store(e)
	metricsOn.Store(e != nil || promOn.Load())
}

// MetricsOff turns every sink off and forgets the values (tests).
func MetricsOff() {
	promOn.Store(false)
	emfSink.Store(nil)
	metricsOn.Store(false)
	for _, m := range All {
		m.mu.Lock()
		m.series = nil
		m.mu.Unlock()
	}
}

// record is every measurement's one path: nothing happens while no sink is on.
func (m *Metric) record(v float64, l labels) {
	if !metricsOn.Load() {
		return
	}
	m.slow(v, l)
}

func (m *Metric) slow(v float64, l labels) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	if promOn.Load() {
		m.aggregate(v, l)
	}
	if e := emfSink.Load(); e != nil && m.kind != gauge {
		e.write(m, v, l)
	}
}

func (m *Metric) aggregate(v float64, l labels) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.series == nil {
		m.series = make(map[labels]*series)
	}
	s := m.series[l]
	if s == nil {
		if len(m.series) >= maxSeries {
			// Bounded: a label with unexpected cardinality folds into one series.
			l = labels{overflow, overflow, overflow, overflow}
			if s = m.series[l]; s == nil {
				s = &series{}
				m.series[l] = s
			}
		} else {
			s = &series{}
			m.series[l] = s
		}
	}
	switch m.kind {
	case counter, gauge:
		s.value += v
	case histogram:
		if s.counts == nil {
			s.counts = make([]uint64, len(m.Buckets)+1)
		}
		i, _ := slices.BinarySearch(m.Buckets, v)
		s.counts[i]++
		s.sum += v
		s.count++
	}
}

// maxSeries bounds each instrument's series in the registry.
const maxSeries = 1000

// overflow is the label value of the series past maxSeries.
const overflow = "_other"

// durationBuckets are the seconds buckets of the latency histograms.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// decisionBuckets are the seconds buckets of the time a person takes.
var decisionBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600}

// The instruments.
var (
	Decisions = &Metric{Name: "countersign_decisions_total", EMF: "Decisions", Unit: "Count",
		Help:   "Calls decided, by tier, policy outcome, verdict (allow, deny, escalate) and rule.",
		Labels: []string{"tier", "outcome", "verdict", "rule"}, Dimensions: []string{"Tier", "Outcome", "Verdict", "Rule"},
		DimensionSets: [][]int{{}, {0, 1}, {2}, {3}}, kind: counter}
	Pauses = &Metric{Name: "countersign_pauses_total", EMF: "Pauses", Unit: "Count",
		Help:   "Confirmations created: calls and script batches that wait for a person.",
		Labels: []string{"kind"}, Dimensions: []string{"Kind"}, DimensionSets: [][]int{{}, {0}}, kind: counter}
	ApproverDecisions = &Metric{Name: "countersign_approver_decisions_total", EMF: "ApproverDecisions", Unit: "Count",
		Help:   "Approvers' decisions, by outcome (approved, rejected).",
		Labels: []string{"outcome"}, Dimensions: []string{"Outcome"}, DimensionSets: [][]int{{}, {0}}, kind: counter}
	TimeToDecision = &Metric{Name: "countersign_time_to_decision_seconds", EMF: "TimeToDecision", Unit: "Seconds",
		Help:   "Seconds from a confirmation's creation to an approver's decision, by outcome.",
		Labels: []string{"outcome"}, Dimensions: []string{"Outcome"}, DimensionSets: [][]int{{}, {0}},
		Buckets: decisionBuckets, kind: histogram}
	Expirations = &Metric{Name: "countersign_expirations_total", EMF: "Expirations", Unit: "Count",
		Help:   "Confirmations that expired with nobody deciding, by kind.",
		Labels: []string{"kind"}, Dimensions: []string{"Kind"}, DimensionSets: [][]int{{}, {0}}, kind: counter}
	Redemptions = &Metric{Name: "countersign_redemptions_total", EMF: "Redemptions", Unit: "Count",
		Help:   "Approvals redeemed by agents, by outcome (executed or the refusal's code).",
		Labels: []string{"outcome"}, Dimensions: []string{"Outcome"}, DimensionSets: [][]int{{}, {0}}, kind: counter}
	UpstreamDuration = &Metric{Name: "countersign_upstream_duration_seconds", EMF: "UpstreamLatency", Unit: "Seconds",
		Help:   "Seconds an upstream call took, from sending to the last byte, by connection.",
		Labels: []string{"connection"}, Dimensions: []string{"Connection"}, DimensionSets: [][]int{{}, {0}},
		Buckets: durationBuckets, kind: histogram}
	UpstreamErrors = &Metric{Name: "countersign_upstream_errors_total", EMF: "UpstreamErrors", Unit: "Count",
		Help:   "Upstream calls that failed (unreachable, too large) or answered 5xx, by connection and error type.",
		Labels: []string{"connection", "error_type"}, Dimensions: []string{"Connection", "ErrorType"}, DimensionSets: [][]int{{}, {0}},
		kind: counter}
	Pending = &Metric{Name: "countersign_confirmations_pending", Unit: "Count",
		Help: "Confirmations waiting for a person in this process (the local stack; not sent as EMF).",
		kind: gauge}
	AuditVerifyFailures = &Metric{Name: "countersign_audit_verify_failures_total", EMF: "AuditVerifyFailures", Unit: "Count",
		Help: "Breaks found by audit chain verification.", DimensionSets: [][]int{{}}, kind: counter}
	ShadowDiffers = &Metric{Name: "countersign_policy_shadow_differs_total", EMF: "PolicyShadowDiffers", Unit: "Count",
		Help:   "Calls the candidate policy (settings.json candidate_config) would decide otherwise, by connection.",
		Labels: []string{"connection"}, Dimensions: []string{"Connection"}, DimensionSets: [][]int{{}, {0}}, kind: counter}
	MCPDuration = &Metric{Name: "mcp_server_operation_duration_seconds", EMF: "McpServerOperationDuration", Unit: "Seconds",
		Help:   "MCP requests served (mcp.server.operation.duration), by method, tool and error type.",
		Labels: []string{"mcp_method_name", "gen_ai_tool_name", "error_type"}, Dimensions: []string{"McpMethod", "Tool", "ErrorType"},
		DimensionSets: [][]int{{}, {0}}, Buckets: durationBuckets, kind: histogram}
)

// All lists the instruments in the order /metrics serves them.
var All = []*Metric{Decisions, Pauses, ApproverDecisions, TimeToDecision, Expirations, Redemptions,
	UpstreamDuration, UpstreamErrors, Pending, AuditVerifyFailures, MCPDuration, ShadowDiffers}
