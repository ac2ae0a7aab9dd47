package calls

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/policy"
)

// hookRequest is what a hook receives (docs/configuration.md).
type hookRequest struct {
	Connection string           `json:"connection"`
	Method     string           `json:"method"`
	Path       string           `json:"path"`
	Endpoint   string           `json:"endpoint"`
	Args       countersign.Args `json:"args"`
	Credential string           `json:"credential"`
	Delegated  bool             `json:"delegated"`
}

type hookAnswer struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

// askHooks asks each of the connection's hooks in order: the first deny
// decides, any ask raises the call to confirm. A hook that cannot be reached
// or answers nonsense denies the call: when in doubt, refuse.
func (s *Service) askHooks(ctx context.Context, cred *countersign.Credential, p *prepared, m *policy.Match) policy.HookAnswer {
	conn := p.cfg.Connections[p.Connection]
	req := hookRequest{Connection: p.Connection, Method: p.Method, Path: p.Path, Endpoint: m.Endpoint.Path,
		Args: countersign.Args{Path: m.Params.Map(), Query: confirm.QueryArgs(p.Query), Body: p.arg}, Credential: cred.ID, Delegated: p.Delegated}
	if req.Args.Query == nil {
		req.Args.Query = map[string]any{}
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return policy.HookAnswer{Decision: policy.HookDeny, Reason: "the call could not be sent to its hook"}
	}
	client := s.Hooks
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	answer := policy.HookAnswer{Decision: policy.HookAllow}
	for _, h := range conn.Hooks {
		a, err := askHook(ctx, client, h.URL, payload)
		if err != nil {
			s.logger().WarnContext(ctx, "hook failed", "connection", conn.Name, "hook", h.URL, "error", err)
			return policy.HookAnswer{Decision: policy.HookDeny, Reason: fmt.Sprintf("hook %s failed, so the call is refused: %v", h.URL, err)}
		}
		switch a.Decision {
		case policy.HookDeny:
			return a
		case policy.HookAsk:
			answer = a
		}
	}
	return answer
}

func askHook(ctx context.Context, client *http.Client, url string, payload []byte) (policy.HookAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return policy.HookAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return policy.HookAnswer{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return policy.HookAnswer{}, fmt.Errorf("status %d", resp.StatusCode)
	}
	var a hookAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&a); err != nil {
		return policy.HookAnswer{}, fmt.Errorf("answer is not JSON: %v", err)
	}
	d, ok := policy.ParseHookDecision(a.Decision)
	if !ok {
		return policy.HookAnswer{}, fmt.Errorf("decision %q is not allow, deny or ask", a.Decision)
	}
	if a.Reason == "" {
		a.Reason = "the connection's hook answered " + a.Decision
	}
	return policy.HookAnswer{Decision: d, Reason: a.Reason}, nil
}
