package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/policy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	petstoreDoc    = "testdata/petstore/openapi.yaml"
	petstoreGolden = "testdata/petstore/policy.golden.json"
	shopDoc        = "testdata/shop-3.1.yaml"
)

// loadAsConnection loads policy.json text as connection name of a fresh
// configuration directory, as the server would.
func loadAsConnection(tb testing.TB, name string, text []byte) *config.Config {
	tb.Helper()
	dir := tb.TempDir()
	conn := filepath.Join(dir, "connections", name)
	if err := os.MkdirAll(conn, 0o755); err != nil {
		tb.Fatal(err)
	}
	for p, b := range map[string][]byte{
		filepath.Join(dir, "settings.json"): []byte(`{"approvers": {"console": true}}`),
		filepath.Join(conn, "policy.json"):  text,
	} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	cfg, err := config.Load(dir, &config.LoadOptions{LookupEnv: func(string) (string, bool) { return "x", true }})
	if err != nil {
		tb.Fatalf("the policy does not load:\n%v\n%s", err, text)
	}
	return cfg
}

func TestProposePetstoreGolden(t *testing.T) {
	r := runCmd(t, "propose", "--connection", "petstore", petstoreDoc)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if *update {
		if err := os.WriteFile(petstoreGolden, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(petstoreGolden)
	if err != nil {
		t.Fatalf("%v (run go test ./infra/countersign -run Golden -update)", err)
	}
	if d := cmp.Diff(string(golden), r.stdout); d != "" {
		t.Errorf("proposal differs from %s (-golden +got; -update rewrites it):\n%s", petstoreGolden, d)
	}
	if want := "connection petstore: 19 endpoints, 3 at the confirm tier"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}

	// Every operation of the document is an endpoint with its operation id,
	// and every DELETE is at the confirm tier.
	var got struct {
		BaseURL   string           `json:"base_url"`
		Endpoints []policyEndpoint `json:"endpoints"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.BaseURL != "https://petstore3.swagger.io/api/v3" {
		t.Errorf("base_url = %q, want the document's first server", got.BaseURL)
	}
	deletes := 0
	for _, e := range got.Endpoints {
		if e.OperationID == "" {
			t.Errorf("%s %s has no operation_id", e.Method, e.Path)
		}
		if e.Method == "DELETE" {
			deletes++
			if string(e.Confirm) != "true" {
				t.Errorf("DELETE %s: confirm %s, want true", e.Path, e.Confirm)
			}
		} else if len(e.Confirm) != 0 {
			t.Errorf("%s %s (%s): confirm %s, want none (auto)", e.Method, e.Path, e.OperationID, e.Confirm)
		}
	}
	if deletes != 3 {
		t.Errorf("%d DELETE endpoints, want the document's 3 (deletePet, deleteOrder, deleteUser)", deletes)
	}

	// It loads with shared/config, and the gateway would pause the deletes.
	cfg := loadAsConnection(t, "petstore", []byte(r.stdout))
	for _, c := range []struct {
		method, path string
		want         policy.Tier
	}{
		{"DELETE", "/pet/10", policy.Confirm},
		{"DELETE", "/store/order/7", policy.Confirm},
		{"DELETE", "/user/ada", policy.Confirm},
		{"GET", "/pet/10", policy.Auto},
		{"POST", "/store/order", policy.Auto},
	} {
		call := policy.Call{Connection: "petstore", Method: c.method, Path: c.path, Intent: policy.IntentWrite}
		d := policy.Evaluate(cfg.Policy, policy.Input{Call: &call, Credential: &policy.Credential{ID: "t", Choice: countersign.AskPerson}})
		if d.Tier != c.want || d.Code == policy.CodeUnknownOperation {
			t.Errorf("%s %s: tier %s (%s), want %s", c.method, c.path, d.Tier, d.Reason, c.want)
		}
	}
}

func TestPropose31(t *testing.T) {
	r := runCmd(t, "propose", shopDoc)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var got struct {
		BaseURL   string           `json:"base_url"`
		Endpoints []policyEndpoint `json:"endpoints"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.BaseURL != "https://eu.shop.example/v2" {
		t.Errorf("base_url = %q, want the first server with its variables at their defaults", got.BaseURL)
	}
	var endpoints []string
	for _, e := range got.Endpoints {
		s := e.Method + " " + e.Path
		if len(e.Confirm) > 0 {
			s += " confirm"
		}
		endpoints = append(endpoints, s)
	}
	want := []string{
		"GET /orders",
		"POST /orders",
		"GET /orders/{order_id}",   // {order-id} renamed: countersign names are [A-Za-z0-9_]
		"PATCH /orders/{order_id}", // "a closed order" in the summary is not "close"
		"DELETE /orders/{order_id} confirm",
		"POST /orders/{order_id}/cancel confirm", // cancelOrder
		"POST /accounts/{id}/close confirm",      // close_account
		"POST /closets",                          // createCloset: not "close"
		"POST /payments confirm",                 // the summary "Pays an invoice."
		"POST /payment-methods",                  // addPaymentMethod: not "pay"
		"PUT /transfers confirm",                 // TransferFunds
		"POST /refunds confirm",                  // issue-refund
		"POST /tokens/{token} confirm",           // revokeAPIToken
		"POST /cache confirm",                    // PURGE_CACHE
		"POST /sessions confirm",                 // destroySessions
		"POST /carts/{cartId}/items confirm",     // removeItemFromCart
		"GET /search",                            // a read whose summary says delete stays auto
		"HEAD /search",
	}
	if d := cmp.Diff(want, endpoints); d != "" {
		t.Errorf("endpoints (-want +got):\n%s", d)
	}
	for _, w := range []string{
		"skipped TRACE /orders/{order-id}",
		`skipped GET /files/{name}.{ext}: segment "{name}.{ext}" mixes a literal and a parameter`,
		"connection shop-orders-api: 18 endpoints, 10 at the confirm tier",
	} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	loadAsConnection(t, "shop", []byte(r.stdout))
}

func TestDestructiveWord(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" for none
	}{
		{"cancelOrder", "cancel"},
		{"close_account", "close"},
		{"closeAccount", "close"},
		{"close-account", "close"},
		{"CLOSE_ACCOUNT", "close"},
		{"closet", ""},
		{"createCloset", ""},
		{"closed", ""},
		{"Deletes a pet.", "delete"},
		{"Remove an item", "remove"},
		{"removeItemFromCart", "remove"},
		{"TransferFunds", "transfer"},
		{"Pays an invoice", "pay"},
		{"payment", ""},
		{"addPaymentMethod", ""},
		{"payInvoice", "pay"},
		{"issue-refund", "refund"},
		{"revokeAPIToken", "revoke"},
		{"APITokenRevoke", "revoke"},
		{"purge", "purge"},
		{"Purges the cache", "purge"},
		{"destroySessions", "destroy"},
		{"v2Delete", "delete"},
		{"deleteV2", "delete"},
		{"undelete", ""},
		{"updatePet", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := destructiveWord(tt.in)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("destructiveWord(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
			}
		})
	}
}

func TestNeedsConfirmation(t *testing.T) {
	tests := []struct {
		method, id, summary string
		want                bool
	}{
		{"DELETE", "", "", true},
		{"DELETE", "archiveThing", "Archive", true},
		{"GET", "deleteReport", "Delete the report", false},
		{"HEAD", "cancel", "", false},
		{"OPTIONS", "purge", "", false},
		{"POST", "cancelOrder", "", true},
		{"PUT", "", "Closes the account", true},
		{"PATCH", "updatePet", "Update a pet", false},
		{"POST", "addPet", "", false},
	}
	for _, tt := range tests {
		if got := needsConfirmation(tt.method, tt.id, tt.summary); got != tt.want {
			t.Errorf("needsConfirmation(%s, %q, %q) = %v, want %v", tt.method, tt.id, tt.summary, got, tt.want)
		}
	}
}

func TestConvertPath(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "/pet/{petId}", want: "/pet/{petId}"},
		{in: "/", want: "/"},
		{in: "/a/b/", want: "/a/b/"},
		{in: "/users/{user-id}/keys/{key.id}", want: "/users/{user_id}/keys/{key_id}"},
		{in: "/a/{1st}", want: "/a/{_1st}"},
		{in: "/a/{a-b}/{a_b}", want: "/a/{a_b}/{a_b_2}"},
		{in: "/a/{}", want: "/a/{param}"},
		{in: "/files/{name}.{ext}", err: `segment "{name}.{ext}" mixes a literal and a parameter`},
		{in: "/v{version}/pets", err: `segment "v{version}" mixes`},
		{in: "/items/{id}:cancel", err: `segment "{id}:cancel" mixes`},
		{in: "pets", err: "does not start with /"},
		{in: "/a//b", err: "empty segment"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := convertPath(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("convertPath(%q) = %q, %v; want an error with %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("convertPath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

// existingPetstore is a policy.json someone wrote for the petstore earlier:
// headers, hooks and delegations, an escalation rule, a stricter tier than
// propose would choose, an endpoint the API no longer has, a DELETE left at
// auto, and an operation id that changed.
const existingPetstore = `{
  "base_url": "http://127.0.0.1:9300/api/v3",
  "headers": {"Authorization": "Bearer ${env:PETSTORE_TOKEN}"},
  "endpoints": [
    {"method": "GET",    "path": "/pet/{id}", "operation_id": "getPetById"},
    {"method": "POST",   "path": "/store/order", "confirm": "review", "operation_id": "placeOrder",
     "escalate": [{"field": "body.quantity", "above": 100, "escalate": "never"}]},
    {"method": "DELETE", "path": "/pet/{id}"},
    {"method": "GET",    "path": "/legacy/report"},
    {"method": "PUT",    "path": "/user/{username}", "operation_id": "putUser"}
  ],
  "delegations": {"escalateConfirm": true},
  "hooks": [{"url": "http://127.0.0.1:9200/hook"}]
}
`

func TestProposeAgainst(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "connections", "petstore", "policy.json")
	if err := os.MkdirAll(filepath.Dir(existing), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(existing, []byte(existingPetstore), 0o644); err != nil {
		t.Fatal(err)
	}

	// Without --write: the diff, and the file untouched.
	r := runCmd(t, "propose", "--against", existing, petstoreDoc)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	wantDiff := []string{
		`~ DELETE /pet/{id} (no confirm: auto) -> confirm: true`,
		`~ DELETE /pet/{id} operation_id: (none) -> deletePet`,
		`- GET /legacy/report (no confirm: auto)`,
		`~ PUT /user/{username} operation_id: putUser -> updateUser`,
		`+ PUT /pet (no confirm: auto) operation_id: updatePet`,
		`+ POST /pet (no confirm: auto) operation_id: addPet`,
		`+ GET /pet/findByStatus (no confirm: auto) operation_id: findPetsByStatus`,
		`+ GET /pet/findByTags (no confirm: auto) operation_id: findPetsByTags`,
		`+ POST /pet/{petId} (no confirm: auto) operation_id: updatePetWithForm`,
		`+ POST /pet/{petId}/uploadImage (no confirm: auto) operation_id: uploadFile`,
		`+ GET /store/inventory (no confirm: auto) operation_id: getInventory`,
		`+ GET /store/order/{orderId} (no confirm: auto) operation_id: getOrderById`,
		`+ DELETE /store/order/{orderId} confirm: true operation_id: deleteOrder`,
		`+ POST /user (no confirm: auto) operation_id: createUser`,
		`+ POST /user/createWithList (no confirm: auto) operation_id: createUsersWithListInput`,
		`+ GET /user/login (no confirm: auto) operation_id: loginUser`,
		`+ GET /user/logout (no confirm: auto) operation_id: logoutUser`,
		`+ GET /user/{username} (no confirm: auto) operation_id: getUserByName`,
		`+ DELETE /user/{username} confirm: true operation_id: deleteUser`,
	}
	if d := cmp.Diff(wantDiff, strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")); d != "" {
		t.Errorf("diff (-want +got):\n%s", d)
	}
	for _, w := range []string{
		`POST /store/order keeps confirm: "review" (the proposal is (no confirm: auto))`,
		"not written; --write PATH writes it",
	} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != existingPetstore {
		t.Fatalf("--against without --write changed the file:\n%s", b)
	}

	// --write applies exactly that diff and keeps what the API does not say.
	r = runCmd(t, "propose", "--against", existing, "--write", existing, petstoreDoc)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "wrote "+existing) {
		t.Errorf("stderr lacks the write:\n%s", r.stderr)
	}
	written, err := os.ReadFile(existing)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		`"base_url": "http://127.0.0.1:9300/api/v3"`,
		`"headers": {"Authorization": "Bearer ${env:PETSTORE_TOKEN}"}`,
		`{"method": "GET",    "path": "/pet/{id}", "operation_id": "getPetById"}`,
		`{"method": "POST",   "path": "/store/order", "confirm": "review", "operation_id": "placeOrder", "escalate": [{"field": "body.quantity", "above": 100, "escalate": "never"}]}`,
		`{"method": "DELETE", "path": "/pet/{id}", "confirm": true, "operation_id": "deletePet"}`,
		`"delegations": {"escalateConfirm": true}`,
		`"hooks": [{"url": "http://127.0.0.1:9200/hook"}]`,
	} {
		if !strings.Contains(string(written), w) {
			t.Errorf("written file lacks %s:\n%s", w, written)
		}
	}
	if strings.Contains(string(written), "/legacy/report") {
		t.Errorf("written file keeps the removed endpoint:\n%s", written)
	}
	cfg := loadAsConnection(t, "petstore", written)
	if n := len(cfg.Policy.Connection("petstore").Endpoints); n != 19 {
		t.Errorf("%d endpoints, want 19", n)
	}

	// Proposing again changes nothing.
	r = runCmd(t, "propose", "--against", existing, petstoreDoc)
	if r.code != exitOK || r.stdout != "" || !strings.Contains(r.stderr, "is up to date with") {
		t.Errorf("second run: exit %d, stdout %q, stderr %q; want no changes", r.code, r.stdout, r.stderr)
	}

	// --base-url replaces the file's base_url, and says so.
	r = runCmd(t, "propose", "--against", existing, "--base-url", "https://petstore.internal/api/v3", petstoreDoc)
	if r.code != exitOK || r.stdout != "~ base_url: http://127.0.0.1:9300/api/v3 -> https://petstore.internal/api/v3\n" {
		t.Errorf("--base-url: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestProposeWrite(t *testing.T) {
	out := filepath.Join(t.TempDir(), "connections", "petstore", "policy.json")
	r := runCmd(t, "propose", "--write", out, "--base-url", "http://127.0.0.1:9300", petstoreDoc)
	if r.code != exitOK || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "{\n  \"base_url\": \"http://127.0.0.1:9300\",\n") {
		t.Errorf("written:\n%s", b)
	}
	loadAsConnection(t, "petstore", b)
	// A second --write without --against refuses to overwrite.
	r = runCmd(t, "propose", "--write", out, petstoreDoc)
	if r.code != exitFail || !strings.Contains(r.stderr, "exists: pass --against "+out) {
		t.Errorf("second write: exit %d, stderr %s", r.code, r.stderr)
	}
	if again, _ := os.ReadFile(out); string(again) != string(b) {
		t.Error("the refused write changed the file")
	}
}

func TestProposeErrors(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	swagger := file("swagger.json", `{"swagger": "2.0", "info": {"title": "x", "version": "1"}, "paths": {}}`)
	notAPI := file("not.json", `{"hello": "world"}`)
	noServer := file("noserver.yaml", "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths:\n  /a:\n    get:\n      responses: {'200': {description: ok}}\n")
	relServer := file("relserver.yaml", "openapi: 3.1.0\ninfo: {title: x, version: '1'}\nservers: [{url: /api}]\npaths: {}\n")
	badAgainst := file("policy.json", `{"base_url": "http://x", "endpoints": [{"method": "GET", "path": "/a", "confirm": false}]}`)

	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{name: "Swagger 2.0", args: []string{swagger}, code: exitFail, stderr: "is OpenAPI/Swagger 2.0: propose reads OpenAPI 3.0 and 3.1"},
		{name: "not OpenAPI", args: []string{notAPI}, code: exitFail, stderr: "is not an OpenAPI document"},
		{name: "a missing file", args: []string{filepath.Join(dir, "nope.yaml")}, code: exitFail, stderr: "no such file"},
		{name: "no servers", args: []string{noServer}, code: exitFail, stderr: "names no absolute server URL (it has no servers): pass --base-url URL"},
		{name: "a relative server", args: []string{relServer}, code: exitFail, stderr: `(its first server is "/api")`},
		{name: "no servers with --base-url", args: []string{"--base-url", "http://127.0.0.1:9", noServer}, code: exitOK},
		{name: "an invalid --against", args: []string{"--against", badAgainst, petstoreDoc}, code: exitFail,
			stderr: "--against " + badAgainst + " does not load: policy.json: endpoints[0].confirm: false is not allowed"},
		{name: "a bad connection name", args: []string{"--connection", "Pet Store", petstoreDoc}, code: exitUsage, stderr: `--connection "Pet Store" is not a valid connection name`},
		{name: "no document", args: nil, code: exitUsage, stderr: "propose takes one OpenAPI document, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, append([]string{"propose"}, tt.args...)...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", r.code, tt.code, r.stderr, tt.stderr)
			}
		})
	}
}

func TestDefaultConnectionName(t *testing.T) {
	tests := []struct{ against, title, want string }{
		{"infra/config/connections/crm/policy.json", "Anything", "crm"},
		{"", "Swagger Petstore - OpenAPI 3.0", "swagger-petstore-openapi-3-0"},
		{"", "  Shop Orders API ", "shop-orders-api"},
		{"", "", "api"},
		{"", "Ünïcode", "n-code"},
		{"policy.json", "Shop", "shop"},
	}
	for _, tt := range tests {
		if got := defaultConnectionName(tt.against, tt.title); got != tt.want || !connectionName.MatchString(got) {
			t.Errorf("defaultConnectionName(%q, %q) = %q, want %q", tt.against, tt.title, got, tt.want)
		}
	}
}

func TestProposeJSONDocument(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "openapi.json")
	err := os.WriteFile(doc, []byte(`{
  "openapi": "3.0.3",
  "info": {"title": "Tiny", "version": "1"},
  "servers": [{"url": "http://127.0.0.1:9400/"}],
  "paths": {
    "/things/{thing_id}": {
      "get": {"operationId": "getThing", "responses": {"200": {"description": "ok"}}},
      "delete": {"operationId": "deleteThing", "responses": {"204": {"description": "gone"}}}
    },
    "/things/{thing_id}/refund": {
      "post": {"operationId": "refundThing", "responses": {"200": {"description": "ok"}}}
    }
  }
}`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	r := runCmd(t, "propose", doc)
	want := `{
  "base_url": "http://127.0.0.1:9400",
  "endpoints": [
    {"method": "GET",    "path": "/things/{thing_id}", "operation_id": "getThing"},
    {"method": "DELETE", "path": "/things/{thing_id}", "confirm": true, "operation_id": "deleteThing"},
    {"method": "POST",   "path": "/things/{thing_id}/refund", "confirm": true, "operation_id": "refundThing"}
  ]
}
`
	if r.code != exitOK || r.stdout != want {
		t.Fatalf("exit %d, stderr %s\n%s", r.code, r.stderr, cmp.Diff(want, r.stdout))
	}
	if !strings.Contains(r.stderr, "connection tiny: 3 endpoints, 2 at the confirm tier") {
		t.Errorf("stderr: %s", r.stderr)
	}
}
