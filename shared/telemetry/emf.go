package telemetry

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// EMF writes measurements as CloudWatch Embedded Metric Format lines: one
// JSON object per line, whose _aws member tells CloudWatch Logs which of
// its members are metrics and which are dimensions. On Lambda the writer
// is stdout, which the function's log group receives; no API call is made.
//
// Each measurement is its own line, written when it is recorded: a frozen
// or killed execution environment loses nothing that was measured.
type EMF struct {
	// W receives the lines; writes are serialised.
	W io.Writer
	// Namespace is the CloudWatch namespace (template.yaml: Countersign).
	Namespace string
	// Properties are added to every line as plain members, searchable in
	// CloudWatch Logs Insights but not dimensions (e.g. the function name).
	Properties map[string]string
	// Now returns the time stamped on a line; nil means time.Now.
	Now func() time.Time

	mu sync.Mutex
}

// The limits of the EMF specification that this writer keeps.
const (
	emfMaxMetrics    = 100 // metric definitions in one directive
	emfMaxDimensions = 30  // dimension keys in one dimension set
	emfMaxValues     = 100 // values in one metric's array
)

type emfMetricDef struct {
	Name string `json:"Name"`
	Unit string `json:"Unit,omitempty"`
}

type emfDirective struct {
	Namespace  string         `json:"Namespace"`
	Dimensions [][]string     `json:"Dimensions"`
	Metrics    []emfMetricDef `json:"Metrics"`
}

type emfMeta struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

// emfValue is a dimension's value: CloudWatch refuses an empty one.
func emfValue(v string) string {
	if v == "" {
		return "none"
	}
	return v
}

func (e *EMF) write(m *Metric, v float64, l labels) {
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	doc := make(map[string]any, len(e.Properties)+len(m.Dimensions)+2)
	for k, p := range e.Properties {
		doc[k] = p
	}
	sets := make([][]string, 0, len(m.DimensionSets))
	for _, set := range m.DimensionSets {
		names := make([]string, 0, min(len(set), emfMaxDimensions))
		for _, i := range set[:min(len(set), emfMaxDimensions)] {
			names = append(names, m.Dimensions[i])
		}
		sets = append(sets, names)
	}
	for i, d := range m.Dimensions {
		doc[d] = emfValue(l[i])
	}
	doc[m.EMF] = v
	doc["_aws"] = emfMeta{
		Timestamp: now().UnixMilli(),
		CloudWatchMetrics: []emfDirective{{
			Namespace: e.Namespace, Dimensions: sets,
			Metrics: []emfMetricDef{{Name: m.EMF, Unit: m.Unit}},
		}},
	}
	line, err := json.Marshal(doc)
	if err != nil {
		return
	}
	line = append(line, '\n')
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.W.Write(line)
}
