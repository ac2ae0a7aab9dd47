package mcpapi

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/shared/fault"
)

// labelOf is the one table from codes to how a tool result names them
// (the MCP counterpart of httpapi's status table); a test fails when a code
// of package fault has no entry. A denial reads "Denied (<code>): <reason>";
// the confirmation lifecycle refuses a spent, pending or expired approval;
// everything else is an error.
var labelOf = map[fault.Code]string{
	fault.InvalidRequest:        labelError,
	fault.Unauthenticated:       labelError,
	fault.Forbidden:             labelDenied,
	fault.BadSignature:          labelDenied,
	fault.RequiresConfirmation:  labelDenied,
	fault.ReviewRequired:        labelDenied,
	fault.Blocked:               labelDenied,
	fault.ReadOnly:              labelDenied,
	fault.WriteIntentRequired:   labelDenied,
	fault.HookDenied:            labelDenied,
	fault.ConfirmationRejected:  labelDenied,
	fault.ConfirmationMismatch:  labelDenied,
	fault.UnknownOperation:      labelError,
	fault.UnknownConfirmation:   labelRefused,
	fault.ConfirmationPending:   labelRefused,
	fault.ConfirmationUsed:      labelRefused,
	fault.ConfirmationExpired:   labelRefused,
	fault.ConfirmationDecided:   labelRefused,
	fault.ResourceChanged:       labelRefused,
	fault.NotFound:              labelError,
	fault.MethodNotAllowed:      labelError,
	fault.PayloadTooLarge:       labelError,
	fault.IdempotencyKeyReused:  labelError,
	fault.IdempotencyInProgress: labelError,
	fault.RateLimited:           labelError,
	fault.InvalidRemember:       labelError,
	fault.InvalidEdit:           labelError,
	fault.EditEscalated:         labelError,
	fault.CredentialExists:      labelError,
	fault.ScriptError:           labelError,
	fault.ScriptLimit:           labelError,
	fault.ScriptDiverged:        labelError,
	fault.OutcomeUnknown:        labelRefused,
	fault.UpstreamUnreachable:   labelError,
	fault.Internal:              labelError,
}

const (
	labelDenied  = "Denied"
	labelRefused = "Refused"
	labelError   = "Error"
)

// faultText is the text of a denial or error: "<label> (<code>): <reason>".
func faultText(code fault.Code, reason string) string {
	label, ok := labelOf[code]
	if !ok {
		label, code = labelError, fault.Internal
	}
	return fmt.Sprintf("%s (%s): %s", label, code, reason)
}

// faultView is the structured content of a denial or error.
type faultView struct {
	Status    string `json:"status"`
	Code      string `json:"code"`
	Reason    string `json:"reason"`
	Tier      string `json:"tier,omitempty"`
	Escalated bool   `json:"escalated,omitempty"`
	Rule      string `json:"rule,omitempty"`
	ReviewID  string `json:"review_id,omitempty"`
}

// faultResult is a tool result with isError set, for a denial or an error.
func faultResult(code fault.Code, reason string) *mcp.CallToolResult {
	status := "error"
	if labelOf[code] == labelDenied {
		status = "denied"
	}
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: faultText(code, reason)}},
		StructuredContent: faultView{Status: status, Code: string(code), Reason: reason},
	}
}

// errorResult renders an error from the pipeline: its code and reason,
// never its cause (which may name internals; it is logged where it happened).
func errorResult(err error) *mcp.CallToolResult {
	return faultResult(fault.CodeOf(err), fault.ReasonOf(err))
}

// textResult is a result with one text block and structured content.
func textResult(text string, structured any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: structured}
}
