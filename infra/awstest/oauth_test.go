package awstest

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/storage"

	"github.com/countersign/countersign/internal/oidctest"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/shared/oauth"
)

// signInClientID is countersign's client at the test's OpenID provider: a
// public client with PKCE, like the template's Cognito app client.
const signInClientID = "countersign-aws"

// startProvider starts zitadel/oidc's OpenID provider (its op package,
// certified, with the example's in-memory storage and login form) on
// 127.0.0.1 and puts it where the template's Cognito user pool would be:
// COUNTERSIGN_SIGNIN_ISSUER (UserPool.ProviderURL) and
// COUNTERSIGN_SIGNIN_CLIENT_ID (UserPoolClient), with the API's
// /oauth/callback as its redirect URI, as UserPoolClient registers it.
func (s *stack) startProvider() {
	s.provider = oidctest.Start(s.tb, storage.NativeClient(signInClientID, s.front.URL+oauth.PathCallback))
	s.issuer = s.provider.Issuer
	s.res.attrs["UserPool.ProviderURL"] = s.issuer
	s.res.refs["UserPool"] = "awstest-pool"
	s.res.refs["UserPoolClient"] = signInClientID
}

var consentField = regexp.MustCompile(`name="request" value="([^"]+)"`)

const (
	clientRedirect = "http://127.0.0.1:9/cb"
	pkceVerifier   = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
)

// oauthSignIn: through the gateway function, an MCP client discovers the
// authorization server from /mcp's 401 (WWW-Authenticate: Bearer
// resource_metadata=...) and the metadata documents, registers (RFC
// 7591), and sends the person to /oauth/authorize; the person signs in at
// the identity provider the template names (a real zitadel/oidc provider),
// comes back to /oauth/callback, allows on the consent page, and the
// client's code gets an access token that works on /v1 (gateway) and /mcp
// (scripts function); the development sign-in page is not served.
func oauthSignIn(f *flow) {
	front := f.s.front.URL
	// /mcp without a token: 401 naming the resource's metadata.
	req, _ := http.NewRequestWithContext(f.ctx, http.MethodPost, front+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"awstest","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.Fatal(err)
	}
	resp.Body.Close()
	want := `resource_metadata="` + front + oauth.PathResourceMetadata + `/mcp"`
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), want) {
		f.Fatalf("/mcp without a token: %d, WWW-Authenticate %q; want 401 with %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
	}
	// The metadata documents.
	prm := f.do(http.MethodGet, oauth.PathResourceMetadata+"/mcp", nil, "")
	if prm.Status != 200 || prm.str("resource") != front+"/mcp" {
		f.Fatalf("protected resource metadata: %d %s", prm.Status, prm.Raw)
	}
	if as, _ := prm.Body["authorization_servers"].([]any); len(as) != 1 || as[0] != front {
		f.Fatalf("protected resource metadata names %v, want [%s]", prm.Body["authorization_servers"], front)
	}
	asm := f.do(http.MethodGet, oauth.PathServerMetadata, nil, "")
	if asm.Status != 200 || asm.str("issuer") != front || asm.str("registration_endpoint") != front+oauth.PathRegister {
		f.Fatalf("authorization server metadata: %d %s", asm.Status, asm.Raw)
	}
	// The development sign-in page is never served on AWS.
	if dev := f.do(http.MethodGet, oauth.PathDevSignIn, nil, ""); dev.Status != http.StatusNotFound {
		f.Fatalf("GET %s: %d, want 404 (never on AWS)", oauth.PathDevSignIn, dev.Status)
	}
	// RFC 7591 registration, the provider's login form, the callback,
	// consent, and the code for a token (accessToken).
	access, clientID := f.accessToken(f.browser("ada"), front+"/mcp")
	// The token works on /mcp (the scripts function).
	req, _ = http.NewRequestWithContext(f.ctx, http.MethodPost, front+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"awstest","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+access)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		f.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "serverInfo") {
		f.Fatalf("/mcp initialize with the token: %d %s", resp.StatusCode, body)
	}
	// Not on the JSON API (RFC 8707: its audience is /mcp); a token
	// requested for the JSON API (the gateway function) is the person's
	// credential there.
	if me := f.do(http.MethodGet, "/v1/credentials/me", http.Header{"Authorization": {"Bearer " + access}}, ""); me.Status != http.StatusUnauthorized {
		f.Fatalf("/v1/credentials/me with the /mcp token: %d %s, want 401", me.Status, me.Raw)
	}
	apiAccess, _ := f.accessToken(f.browser("ada"), front)
	me := f.do(http.MethodGet, "/v1/credentials/me", http.Header{"Authorization": {"Bearer " + apiAccess}}, "")
	if me.Status != 200 || !strings.Contains(me.Raw, f.s.issuer) && !strings.Contains(me.Raw, "user_") {
		f.Fatalf("/v1/credentials/me with the token: %d %s", me.Status, me.Raw)
	}
	// Without a token the JSON API's 401 names its metadata too.
	if resp, err := http.Get(front + "/v1/credentials/me"); err != nil {
		f.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+front+oauth.PathResourceMetadata+`"`) {
		f.Fatalf("/v1/credentials/me without a token: %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	// Revoked (RFC 7009): refused from the next call on.
	rev := f.do(http.MethodPost, oauth.PathRevoke, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
		url.Values{"token": {access}, "client_id": {clientID}}.Encode())
	if rev.Status != 200 {
		f.Fatalf("revoke: %d %s", rev.Status, rev.Raw)
	}
	req, _ = http.NewRequestWithContext(f.ctx, http.MethodPost, front+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"awstest","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+access)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		f.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		f.Fatalf("/mcp with a revoked token: %d, want 401", resp.StatusCode)
	}
}

// TestTemplateSignIn: template.yaml passes cfn-lint and the SAM translator
// with its sign-in resources: with SignInIssuer empty (the default) a
// Cognito user pool, its hosted sign-in domain and a public app client
// (code flow, PKCE, no secret) whose callback is the API's
// /oauth/callback, and the gateway and scripts functions take the pool's
// issuer and client from their environment; with SignInIssuer given, no
// pool, and the functions take that issuer and SignInClientId. The
// OAuth paths route to the gateway function.
func TestTemplateSignIn(t *testing.T) {
	if _, err := exec.LookPath("cfn-lint"); err != nil {
		testenv.Missing(t, testenv.CfnLint, "cfn-lint is not installed; install it with: python3 -m pip install cfn-lint aws-sam-translator")
	}
	file, err := filepath.Abs(filepath.Join("..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lintErr := make(chan error, 1)
	go func() { lintErr <- lintTemplate(file) }()
	tpl := loadTemplate(t, file)

	for id, typ := range map[string]string{"UserPool": "AWS::Cognito::UserPool", "UserPoolDomain": "AWS::Cognito::UserPoolDomain",
		"UserPoolClient": "AWS::Cognito::UserPoolClient"} {
		r := obj(obj(tpl.Raw["Resources"])[id])
		if r["Type"] != typ || r["Condition"] != "CreateUserPool" {
			t.Errorf("%s: type %v, condition %v; want %s under CreateUserPool", id, r["Type"], r["Condition"], typ)
		}
		if obj(obj(tpl.Transformed["Resources"])[id]) == nil {
			t.Errorf("%s is not in the SAM translator's output", id)
		}
	}
	client := tpl.properties("UserPoolClient")
	if client["GenerateSecret"] != false || fmt.Sprint(client["AllowedOAuthFlows"]) != "[code]" || client["AllowedOAuthFlowsUserPoolClient"] != true {
		t.Errorf("UserPoolClient: %v; want a public client with the code flow", client)
	}
	const api = "https://api1.execute-api." + region + "." + urlSuffix
	resolve := func(params map[string]string, v any) string {
		t.Helper()
		r := newResolver(tpl, params)
		r.refs["HttpApi"] = "api1"
		r.refs["UserPool"] = region + "_pool1"
		r.refs["UserPoolClient"] = "client1"
		r.attrs["UserPool.ProviderURL"] = "https://cognito-idp." + region + ".amazonaws.com/" + region + "_pool1"
		out, err := r.eval(v)
		if err != nil {
			t.Fatalf("resolve %v: %v", v, err)
		}
		return fmt.Sprint(out)
	}
	if got := resolve(nil, anyList(client["CallbackURLs"])[0]); got != api+oauth.PathCallback {
		t.Errorf("UserPoolClient callback %s, want %s", got, api+oauth.PathCallback)
	}
	for _, fn := range []string{"GatewayFunction", "ScriptsFunction"} {
		env := obj(obj(tpl.properties(fn)["Environment"])["Variables"])
		if got := resolve(nil, env["COUNTERSIGN_SIGNIN_ISSUER"]); got != "https://cognito-idp."+region+".amazonaws.com/"+region+"_pool1" {
			t.Errorf("%s: COUNTERSIGN_SIGNIN_ISSUER %s, want the user pool's", fn, got)
		}
		if got := resolve(nil, env["COUNTERSIGN_SIGNIN_CLIENT_ID"]); got != "client1" {
			t.Errorf("%s: COUNTERSIGN_SIGNIN_CLIENT_ID %s, want the app client's", fn, got)
		}
		given := map[string]string{"SignInIssuer": "https://idp.example.com", "SignInClientId": "cs"}
		if got := resolve(given, env["COUNTERSIGN_SIGNIN_ISSUER"]); got != "https://idp.example.com" {
			t.Errorf("%s: with SignInIssuer, COUNTERSIGN_SIGNIN_ISSUER %s", fn, got)
		}
		if got := resolve(given, env["COUNTERSIGN_SIGNIN_CLIENT_ID"]); got != "cs" {
			t.Errorf("%s: with SignInIssuer, COUNTERSIGN_SIGNIN_CLIENT_ID %s", fn, got)
		}
		if got := resolve(nil, env["COUNTERSIGN_PUBLIC_URL"]); got != api {
			t.Errorf("%s: COUNTERSIGN_PUBLIC_URL %s, want %s", fn, got, api)
		}
	}
	if ok, err := newResolver(tpl, map[string]string{"SignInIssuer": "https://idp.example.com"}).condition("CreateUserPool"); err != nil || ok {
		t.Errorf("CreateUserPool with SignInIssuer given: %v, %v; want false", ok, err)
	}
	routes, err := newResolver(tpl, nil).routes()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{oauth.PathResourceMetadata, oauth.PathResourceMetadata + "/mcp", oauth.PathServerMetadata, oauth.PathRegister,
		oauth.PathAuthorize, oauth.PathToken, oauth.PathRevoke, oauth.PathCallback} {
		found := false
		for _, rt := range routes {
			if _, ok := rt.match(p); ok && strings.HasSuffix(rt.Function, "gateway") {
				found = true
			}
		}
		if !found {
			t.Errorf("no route of the gateway function matches %s", p)
		}
	}
	if err := <-lintErr; err != nil {
		t.Fatal(err)
	}
}
