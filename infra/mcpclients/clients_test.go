package mcpclients

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// connectBudget is how long a client may take to connect and list the
// tools (measured inside the client, from before connect to the list).
const connectBudget = 2 * time.Second

// sdkClient is one way of running client.mjs.
type sdkClient struct {
	name string
	plan map[string]any
	// protocol is the version the client must end up on.
	protocol string
}

var sdkClients = []sdkClient{
	// SDK v1 1.32.2 initializes on its newest version, 2025-11-25.
	{"SDK v1 on 2025-11-25", map[string]any{"sdk": "v1"}, "2025-11-25"},
	// SDK v2 2.4.0's default negotiation is "legacy": initialize on 2025-11-25.
	{"SDK v2 default (2025-11-25)", map[string]any{"sdk": "v2"}, "2025-11-25"},
	// Probing with server/discover selects 2026-07-28 (multi round-trip
	// requests: the person is asked through an input_required result).
	{"SDK v2 auto (2026-07-28)", map[string]any{"sdk": "v2", "negotiation": "auto"}, "2026-07-28"},
}

// listChangedClient is SDK v2 on 2026-07-28 with a tools list-changed
// handler: it opens subscriptions/listen while connecting, and connect
// waits for the server's acknowledgement.
var listChangedClient = sdkClient{"SDK v2 auto (2026-07-28) with a list-changed handler",
	map[string]any{"sdk": "v2", "negotiation": "auto", "listChanged": true}, "2026-07-28"}

func (c sdkClient) with(e *env, extra map[string]any) map[string]any {
	plan := map[string]any{"url": e.mcpURL, "key": demoKey}
	for k, v := range c.plan {
		plan[k] = v
	}
	for k, v := range extra {
		plan[k] = v
	}
	return plan
}

// TestSDKConnect: each TypeScript SDK client connects (initialize, or
// server/discover and subscriptions/listen on 2026-07-28) and lists the
// demo key's tools in under 2 s, on the expected protocol version.
func TestSDKConnect(t *testing.T) {
	need(t)
	e := startStack(t)
	for _, c := range append(sdkClients, listChangedClient) {
		t.Run(c.name, func(t *testing.T) {
			evs := startClient(t, c.with(e, map[string]any{"elicit": "accept"}), 15*time.Second).wait(t)
			conn, tools := find(evs, "connected"), find(evs, "tools")
			if conn == nil || tools == nil {
				t.Fatalf("no connection or no tool list: %s", eventsJSON(evs))
			}
			t.Logf("connected in %d ms on %s; connect + tools/list %d ms", conn.MS, conn.Protocol, tools.MS)
			if conn.Protocol != c.protocol {
				t.Errorf("protocol %q, want %q", conn.Protocol, c.protocol)
			}
			if took := time.Duration(tools.MS) * time.Millisecond; took >= connectBudget {
				t.Errorf("connect + tools/list took %s, want under %s", took, connectBudget)
			}
			for _, want := range []string{"deleteContact", "get_contacts_by_id", "confirmation_status"} {
				if !slices.Contains(tools.Names, want) {
					t.Errorf("tools/list %v lacks %s", tools.Names, want)
				}
			}
		})
	}
}

// TestSDKElicitation: each SDK client declares form elicitation and calls
// deleteContact (a confirm-tier DELETE) with the demo ask_person key. The
// person must be asked: in the client (its elicitation handler, on any
// protocol version), or, where the server takes the out-of-band path, by
// the approvers (the console's approval link, which the test follows as
// the person would) while the client waits through confirmation_status as
// the result tells it. Accepting runs the DELETE exactly once at the demo
// CRM; declining runs nothing.
func TestSDKElicitation(t *testing.T) {
	need(t)
	for i, c := range sdkClients {
		for _, decision := range []string{"accept", "decline"} {
			t.Run(c.name+" "+decision, func(t *testing.T) {
				e := startStack(t)
				id := fmt.Sprint(3 + i)
				path := "/contacts/" + id
				r := startClient(t, c.with(e, map[string]any{"elicit": decision,
					"call": map[string]any{"name": "deleteContact", "arguments": map[string]any{"id": id}}}), 40*time.Second)
				// The out-of-band path: the person decides on the approval page.
				outOfBand := false
				if ev := r.next("paused"); ev != nil {
					outOfBand = true
					if n := e.upstreamCount("DELETE", path); n != 0 {
						t.Errorf("DELETE %s ran %d times before anyone approved", path, n)
					}
					link := e.approvalLink(ev.ConfirmationID)
					e.decide(link, map[string]string{"accept": "approve", "decline": "reject"}[decision])
				}
				evs := r.wait(t)
				elicited, res := find(evs, "elicited"), find(evs, "result")
				if res == nil {
					t.Fatalf("no tools/call result: %s", eventsJSON(evs))
				}
				t.Logf("asked in the client: %v; out of band: %v; result: %q", elicited != nil, outOfBand, text(res.Result))
				switch {
				case elicited != nil:
					if !strings.Contains(elicited.Message, "DELETE "+path) {
						t.Errorf("the person was asked %q, which does not name DELETE %s", elicited.Message, path)
					}
				case !outOfBand:
					t.Fatalf("the person was not asked, in the client or out of band: %s", eventsJSON(evs))
				}
				last := res.Result
				if outOfBand {
					var st *event
					for i := range evs {
						if evs[i].Event == "status" {
							st = &evs[i]
						}
					}
					if st == nil {
						t.Fatalf("the client never got the outcome through confirmation_status: %s", eventsJSON(evs))
					}
					last = st.Result
				}
				n := e.upstreamCount("DELETE", path)
				if decision == "accept" {
					if n != 1 {
						t.Errorf("accepted: DELETE %s reached the demo CRM %d times, want exactly 1", path, n)
					}
					if outOfBand && structured(last)["status"] != "executed" || !outOfBand && !strings.HasPrefix(text(last), "204") {
						t.Errorf("accepted: the client's last result %v", last)
					}
				} else {
					if n != 0 {
						t.Errorf("declined: DELETE %s reached the demo CRM %d times, want 0", path, n)
					}
					if outOfBand && structured(last)["status"] != "rejected" || !outOfBand && last["isError"] != true {
						t.Errorf("declined: the client's last result %v", last)
					}
				}
				if reqs := e.stack.Demo.Requests(); len(reqs) != n {
					t.Errorf("the demo CRM saw other requests too: %+v", reqs)
				}
			})
		}
	}
}

// TestClaudeCode: Claude Code's own connection check. In a temporary HOME
// (nothing of the machine's Claude configuration is read or written),
// `claude mcp add --transport http` registers the stack's /mcp with the
// demo key's header, and `claude mcp get` connects to it and reports it
// connected, in under 2 s.
func TestClaudeCode(t *testing.T) {
	need(t)
	claude, err := filepath.Abs("node_modules/.bin/claude")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(claude); err != nil {
		t.Fatalf("the pinned @anthropic-ai/claude-code did not install its claude binary: %v", err)
	}
	e := startStack(t)
	home := t.TempDir()
	env := []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "ANTHROPIC_API_KEY="}
	ctx := context.Background()
	out, took, err := runCmd(ctx, 30*time.Second, env, claude, "mcp", "add", "--scope", "user", "--transport", "http",
		"countersign", e.mcpURL, "--header", "Authorization: Bearer "+demoKey)
	if err != nil {
		t.Fatalf("claude mcp add (%s): %v\n%s", took, err, out)
	}
	out, took, err = runCmd(ctx, 60*time.Second, env, claude, "mcp", "get", "countersign")
	t.Logf("claude mcp get took %s:\n%s", took.Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("claude mcp get: %v", err)
	}
	if !strings.Contains(out, "Connected") || !strings.Contains(out, e.mcpURL) {
		t.Errorf("claude mcp get does not report %s connected", e.mcpURL)
	}
	if took >= connectBudget {
		t.Errorf("claude mcp get took %s, want under %s", took.Round(time.Millisecond), connectBudget)
	}
}
