package telemetry

import (
	"bufio"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Handler serves every instrument in the Prometheus text exposition format
// (version 0.0.4), for GET and HEAD. The local stack mounts it on /metrics.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if r.Method == http.MethodHead {
			return
		}
		_ = WritePrometheus(w)
	})
}

// WritePrometheus writes every instrument in the Prometheus text format.
func WritePrometheus(w io.Writer) error {
	b := bufio.NewWriter(w)
	for _, m := range All {
		m.writeText(b)
	}
	return b.Flush()
}

func (m *Metric) writeText(b *bufio.Writer) {
	typ := "counter"
	switch m.kind {
	case histogram:
		typ = "histogram"
	case gauge:
		typ = "gauge"
	}
	b.WriteString("# HELP " + m.Name + " " + escapeHelp(m.Help) + "\n")
	b.WriteString("# TYPE " + m.Name + " " + typ + "\n")
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]labels, 0, len(m.series))
	for k := range m.series {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b labels) int { return slices.Compare(a[:], b[:]) })
	if len(keys) == 0 && len(m.Labels) == 0 && m.kind != histogram {
		b.WriteString(m.Name + " 0\n")
		return
	}
	for _, k := range keys {
		s := m.series[k]
		switch m.kind {
		case counter, gauge:
			b.WriteString(m.Name + m.labelText(k, "") + " " + formatFloat(s.value) + "\n")
		case histogram:
			var cum uint64
			for i, ub := range m.Buckets {
				cum += s.counts[i]
				b.WriteString(m.Name + "_bucket" + m.labelText(k, formatFloat(ub)) + " " + strconv.FormatUint(cum, 10) + "\n")
			}
			b.WriteString(m.Name + "_bucket" + m.labelText(k, "+Inf") + " " + strconv.FormatUint(s.count, 10) + "\n")
			b.WriteString(m.Name + "_sum" + m.labelText(k, "") + " " + formatFloat(s.sum) + "\n")
			b.WriteString(m.Name + "_count" + m.labelText(k, "") + " " + strconv.FormatUint(s.count, 10) + "\n")
		}
	}
}

// labelText is {name="value",...}, with le last for a histogram bucket.
func (m *Metric) labelText(k labels, le string) string {
	if len(m.Labels) == 0 && le == "" {
		return ""
	}
	var sb strings.Builder
	sb.WriteByte('{')
	for i, n := range m.Labels {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(n + `="` + escapeLabel(k[i]) + `"`)
	}
	if le != "" {
		if len(m.Labels) > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`le="` + le + `"`)
	}
	sb.WriteByte('}')
	return sb.String()
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabel(s string) string { return labelEscaper.Replace(strings.ToValidUTF8(s, "\uFFFD")) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
