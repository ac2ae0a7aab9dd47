package confirm_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/links"
)

const idp = "https://idp.example.com"

// TestWhoMayAnswer: the lifecycle decides who may answer, whatever the
// surface: a person is (issuer, subject); the caller never approves their
// own four-eyes call, from the page, the card or their dialog; an approvers
// list matches verified e-mails only, with no Unicode case fold; the link
// given to the caller decides only for them.
func TestWhoMayAnswer(t *testing.T) {
	ada := &countersign.Person{Issuer: idp, Subject: "ada-sub", Email: "ada@example.com"}
	adaRenamed := &countersign.Person{Issuer: idp, Subject: "ada-sub", Email: "ada.lovelace@example.com"}
	adaElsewhere := &countersign.Person{Issuer: "https://other.example.com", Subject: "ada-sub", Email: "ada@example.com"}
	bob := &countersign.Person{Issuer: idp, Subject: "bob-sub", Email: "bob@example.com"}
	kelvin := &countersign.Person{Issuer: idp, Subject: "k-sub", Email: "\u212Aate@example.com"} // KELVIN SIGN
	kate := &countersign.Person{Issuer: idp, Subject: "kate-sub", Email: "Kate@EXAMPLE.com"}
	noEmail := &countersign.Person{Issuer: idp, Subject: "anon"} // the provider did not verify it: the surface gives none
	katesList := &countersign.ApprovalRules{Approvers: []countersign.ApproverList{{Where: "crm DELETE /contacts/{id}", Emails: []string{"kate@example.com"}}}}
	domainList := &countersign.ApprovalRules{Approvers: []countersign.ApproverList{{Where: "crm DELETE /contacts/{id}", Domains: []string{"@example.com"}}}}
	tests := []struct {
		name     string
		caller   countersign.Credential
		separate bool
		required int
		rules    *countersign.ApprovalRules
		answer   confirm.Answer
		refused  string // a part of the reason; "" when it may
	}{
		{"four eyes: someone else approves", user("ada"), true, 0, nil, confirm.Answer{Approver: "ops", Person: bob}, ""},
		{"four eyes: the caller on the page", user("ada"), true, 0, nil, confirm.Answer{Approver: "ops", Person: ada}, "You made this call"},
		{"four eyes: the caller with a changed e-mail", user("ada"), true, 0, nil, confirm.Answer{Approver: "ops", Person: adaRenamed}, "You made this call"},
		{"four eyes: the same subject at another issuer is someone else", user("ada"), true, 0, nil, confirm.Answer{Approver: "ops", Person: adaElsewhere}, ""},
		{"four eyes: another subject sharing the caller's e-mail", user("ada"), true, 0, nil,
			confirm.Answer{Approver: "ops", Person: &countersign.Person{Issuer: idp, Subject: "other", Email: "ada@example.com"}}, ""},
		{"four eyes: an unbound configured user, by verified e-mail", countersign.Credential{ID: "ada", Email: "Ada@example.com"}, true, 0, nil,
			confirm.Answer{Approver: "ops", Person: ada}, "You made this call"},
		{"four eyes: nobody signed in", user("ada"), true, 0, nil, confirm.Answer{Approver: "ops"}, "Sign in"},
		{"four eyes: the card", user("ada"), true, 0, nil, confirm.Answer{Approver: "card", Person: ada, Credential: "ada"}, "approvers only"},
		{"four eyes: the dialog", user("ada"), true, 0, nil, confirm.Answer{Approver: "client:Claude", Person: ada, Credential: "ada"}, "approvers only"},
		{"four eyes: a key's call, anyone signed in", countersign.Credential{ID: "ada"}, true, 0, nil, confirm.Answer{Approver: "ops", Person: ada}, ""},
		{"quorum: the card", user("ada"), false, 2, nil, confirm.Answer{Approver: "card", Person: ada, Credential: "ada"}, "approvers only"},
		{"the card: no rules", user("ada"), false, 0, nil, confirm.Answer{Approver: "card", Person: ada, Credential: "ada"}, ""},
		{"the card: another credential", user("ada"), false, 0, nil, confirm.Answer{Approver: "card", Person: bob, Credential: "bob"}, "another credential"},
		{"out of band only: the card", user("ada"), false, 0, &countersign.ApprovalRules{OutOfBandOnly: true},
			confirm.Answer{Approver: "card", Person: ada, Credential: "ada"}, "approvers only"},
		{"approvers: on the list, ASCII case folded", user("ada"), false, 0, katesList, confirm.Answer{Approver: "ops", Person: kate}, ""},
		{"approvers: a Kelvin sign is not a k", user("ada"), false, 0, katesList, confirm.Answer{Approver: "ops", Person: kelvin}, "not among the approvers"},
		{"approvers: a domain", user("ada"), false, 0, domainList, confirm.Answer{Approver: "ops", Person: bob}, ""},
		{"approvers: no verified e-mail", user("ada"), false, 0, domainList, confirm.Answer{Approver: "ops", Person: noEmail}, "not among the approvers"},
		{"approvers: a group", user("ada"), false, 0,
			&countersign.ApprovalRules{Approvers: []countersign.ApproverList{{Where: "w", Groups: []string{"payments"}}}},
			confirm.Answer{Approver: "ops", Person: noEmail, Groups: []string{"payments"}}, ""},
		{"approvers: nobody signed in", user("ada"), false, 0, domainList, confirm.Answer{Approver: "ops"}, "Sign in"},
		{"principal link: the caller", user("ada"), false, 0, nil, confirm.Answer{Approver: links.PrincipalApprover, Person: adaRenamed}, ""},
		{"principal link: someone else", user("ada"), false, 0, nil, confirm.Answer{Approver: links.PrincipalApprover, Person: bob}, "did not make this call"},
		{"principal link: a key's call", countersign.Credential{ID: "ada"}, false, 0, nil, confirm.Answer{Approver: links.PrincipalApprover, Person: ada}, "did not make this call"},
		{"principal link: nobody signed in", user("ada"), false, 0, nil, confirm.Answer{Approver: links.PrincipalApprover}, "Sign in"},
		{"no rules: the link alone", user("ada"), false, 0, nil, confirm.Answer{Approver: "ops"}, ""},
		{"passkey: signed in, no assertion", user("ada"), false, 0, &countersign.ApprovalRules{Passkey: true}, confirm.Answer{Approver: "ops", Person: bob}, "needs your passkey"},
		{"passkey: nobody signed in", user("ada"), false, 0, &countersign.ApprovalRules{Passkey: true}, confirm.Answer{Approver: "ops"}, "Sign in"},
		{"passkey: the card", user("ada"), false, 0, &countersign.ApprovalRules{Passkey: true}, confirm.Answer{Approver: "card", Person: ada, Credential: "ada"}, "approvers only"},
		{"passkey: an assertion and no verifier", user("ada"), false, 0, &countersign.ApprovalRules{Passkey: true},
			confirm.Answer{Approver: "ops", Person: bob, Passkey: &confirm.PasskeyProof{Ceremony: "c", Response: []byte("{}")}}, "not available"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if err := e.st.PutCredential(e.ctx, tc.caller); err != nil {
				t.Fatal(err)
			}
			rules := tc.rules
			if rules == nil {
				rules = &countersign.ApprovalRules{}
			}
			c, err := e.svc.Create(e.ctx, confirm.Request{Kind: countersign.KindCall, Credential: "ada", Reason: "r", GatewayRuns: true,
				Operations: []countersign.Operation{deleteOp(t, "ada", "12")}, Required: tc.required, SeparateApprover: tc.separate, Rules: rules})
			if err != nil {
				t.Fatal(err)
			}
			e.ready(t, c.ID)
			a := tc.answer
			a.Approve = true
			_, err = e.svc.Answer(e.ctx, c.ID, a)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (fault.CodeOf(err) != fault.Forbidden || !strings.Contains(fault.ReasonOf(err), tc.refused)):
				t.Fatalf("answer: %v; want forbidden, %q", err, tc.refused)
			case tc.refused != "" && e.get(t, c.ID).Status != countersign.StatusPending:
				t.Fatalf("status %s after a refused answer, want pending", e.get(t, c.ID).Status)
			}
		})
	}
}

// TestGrantRefusedUnderApprovers: an answer given in the client's dialog
// (Grant) to a call its rules leave to the approvers is refused by the
// lifecycle and records nothing.
func TestGrantRefusedUnderApprovers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		separate bool
		required int
		rules    *countersign.ApprovalRules
	}{
		{"four eyes", true, 0, nil},
		{"quorum", false, 2, nil},
		{"approvers", false, 0, &countersign.ApprovalRules{Approvers: []countersign.ApproverList{{Where: "w", Emails: []string{"ada@example.com"}}}}},
		{"out of band only", false, 0, &countersign.ApprovalRules{OutOfBandOnly: true}},
		{"passkey", false, 0, &countersign.ApprovalRules{Passkey: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			_, err := e.svc.Grant(e.ctx, confirm.GrantRequest{ID: "cf_grant", Credential: "ada", Operations: []countersign.Operation{deleteOp(t, "ada", "1")},
				Approve: true, By: "client:Claude", Person: &countersign.Person{Issuer: idp, Subject: "ada-sub"}, ExpiresAt: t0.Add(600e9),
				Required: tc.required, SeparateApprover: tc.separate, Rules: tc.rules})
			if fault.CodeOf(err) != fault.Forbidden {
				t.Fatalf("grant: %v, want forbidden", err)
			}
			if _, err := e.svc.Get(e.ctx, "cf_grant"); fault.CodeOf(err) != fault.UnknownConfirmation {
				t.Fatalf("a refused grant was recorded: %v", err)
			}
		})
	}
}

// TestQuorumCountsSubjects: a quorum counts distinct (issuer, subject):
// two provider accounts sharing a verified e-mail are two people, the
// same subject with another e-mail is one.
func TestQuorumCountsSubjects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		second countersign.Person
		counts bool
	}{
		{"two subjects, one e-mail", countersign.Person{Issuer: idp, Subject: "s2", Email: "ops@example.com"}, true},
		{"one subject, two e-mails", countersign.Person{Issuer: idp, Subject: "s1", Email: "other@example.com"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if err := e.st.PutCredential(e.ctx, user("ada")); err != nil {
				t.Fatal(err)
			}
			c, err := e.svc.Create(e.ctx, confirm.Request{Kind: countersign.KindCall, Credential: "ada", Reason: "r",
				Operations: []countersign.Operation{deleteOp(t, "ada", "1")}, Required: 2, Rules: &countersign.ApprovalRules{}})
			if err != nil {
				t.Fatal(err)
			}
			e.ready(t, c.ID)
			first := countersign.Person{Issuer: idp, Subject: "s1", Email: "ops@example.com"}
			if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops", Person: &first}); err != nil {
				t.Fatal(err)
			}
			got, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops", Person: &tc.second})
			switch {
			case tc.counts && (err != nil || got.Status != countersign.StatusApproved):
				t.Fatalf("second approval: %v; want it to complete the quorum", err)
			case !tc.counts && fault.CodeOf(err) != fault.Forbidden:
				t.Fatalf("second approval by the same subject: %v; want forbidden", err)
			case !tc.counts && e.get(t, c.ID).Status != countersign.StatusPending:
				t.Fatal("the same subject twice approved a quorum of two")
			}
		})
	}
}

// user is a user credential of the person (idp, <id>-sub).
func user(id string) countersign.Credential {
	return countersign.Credential{ID: id, Issuer: idp, Subject: id + "-sub", Email: id + "@example.com"}
}

// TestCallerMayWithdraw: the credential that made a call may always reject
// it in its own client (an MCP task's cancellation, a decline), even where
// only its approvers may approve it: nothing runs, so no rule is bent.
func TestCallerMayWithdraw(t *testing.T) {
	for _, tc := range []struct {
		name     string
		separate bool
		required int
		rules    *countersign.ApprovalRules
	}{
		{"four eyes", true, 0, &countersign.ApprovalRules{}},
		{"a quorum", false, 2, &countersign.ApprovalRules{}},
		{"out of band only", false, 0, &countersign.ApprovalRules{OutOfBandOnly: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if err := e.st.PutCredential(e.ctx, user("ada")); err != nil {
				t.Fatal(err)
			}
			c, err := e.svc.Create(e.ctx, confirm.Request{Kind: countersign.KindCall, Credential: "ada", Reason: "r", GatewayRuns: true,
				Operations: []countersign.Operation{deleteOp(t, "ada", "12")}, Required: tc.required, SeparateApprover: tc.separate, Rules: tc.rules})
			if err != nil {
				t.Fatal(err)
			}
			e.ready(t, c.ID)
			approve := confirm.Answer{Approve: true, Approver: "card", Credential: "ada"}
			if _, err := e.svc.Answer(e.ctx, c.ID, approve); fault.CodeOf(err) != fault.Forbidden {
				t.Fatalf("the caller's approval: %v, want forbidden", err)
			}
			if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approver: "caller:ada", Credential: "ada", Reason: "cancelled"}); err != nil {
				t.Fatalf("the caller's withdrawal: %v", err)
			}
			if got := e.get(t, c.ID).Status; got != countersign.StatusRejected {
				t.Fatalf("status %s, want rejected", got)
			}
		})
	}
}

// TestMayRunReview: under four eyes, recorded when the item was queued,
// the operator who runs a review item is neither the credential that made
// the call nor its person; without four eyes any operator runs it, and a
// caller that cannot be read refuses (fail closed).
func TestMayRunReview(t *testing.T) {
	ada, bob := user("ada"), user("bob")
	adaKey := countersign.Credential{ID: "ada-key", Operator: true}
	rootKey := countersign.Credential{ID: "root", Operator: true}
	for _, tc := range []struct {
		name     string
		caller   *countersign.Credential // nil: not in the store
		callerID string
		separate bool
		operator countersign.Credential
		refused  bool
	}{
		{"no four eyes: the caller runs it", &ada, "ada", false, ada, false},
		{"four eyes: another person", &ada, "ada", true, bob, false},
		{"four eyes: the caller signed in as a person", &ada, "ada", true, ada, true},
		{"four eyes: the caller's person by subject, another credential", &ada, "ada", true,
			countersign.Credential{ID: "ada-2", Issuer: idp, Subject: "ada-sub", Email: "ada.new@example.com"}, true},
		{"four eyes: the key that made it", &adaKey, "ada-key", true, adaKey, true},
		{"four eyes: another key", &adaKey, "ada-key", true, rootKey, false},
		{"four eyes: a person, the caller unreadable", nil, "gone", true, bob, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.caller != nil {
				if err := e.st.PutCredential(e.ctx, *tc.caller); err != nil {
					t.Fatal(err)
				}
			}
			c, err := e.svc.CreateReview(e.ctx, confirm.ReviewRequest{Credential: tc.callerID, Reason: "r",
				Operation: deleteOp(t, tc.callerID, "3"), Retention: 3600e9, SeparateApprover: tc.separate})
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.svc.GetReview(e.ctx, c.ID)
			if err != nil || got.SeparateApprover != tc.separate {
				t.Fatalf("the stored item: %+v, %v; want separate_approver %v kept", got, err, tc.separate)
			}
			err = e.svc.MayRunReview(e.ctx, got, &tc.operator)
			if refused := fault.CodeOf(err) == fault.Forbidden; refused != tc.refused || (err != nil && !refused) {
				t.Fatalf("MayRunReview: %v, want refused %v", err, tc.refused)
			}
		})
	}
}
