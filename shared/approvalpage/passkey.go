package approvalpage

// PasskeyScript is the pending page's script where approving needs a
// passkey (Page.Passkey): on Approve it posts the form with passkey=begin
// (the server begins a ceremony whose challenge is derived from this
// confirmation, the operations kept and the decision), asks the browser
// for an assertion with navigator.credentials.get (user verification
// required), and posts the form again carrying passkey_ceremony and
// passkey_assertion. Reject is posted as it is. It runs under the page's
// Content-Security-Policy nonce; nothing it sends is trusted: the
// lifecycle verifies the assertion.
const PasskeyScript = `(function () {
const f = document.querySelector("form");
const status = document.getElementById("passkey-status");
const b64 = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
const u64 = (a) => btoa(String.fromCharCode(...new Uint8Array(a))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const put = (name, value) => {
  let i = f.querySelector("input[name=" + name + "]");
  if (!i) { i = document.createElement("input"); i.type = "hidden"; i.name = name; f.appendChild(i); }
  i.value = value;
};
let signed = false;
f.addEventListener("submit", async (ev) => {
  const button = ev.submitter;
  if (signed || !button || button.value !== "approve") return;
  ev.preventDefault();
  status.textContent = "Asking your passkey…";
  try {
    const fields = new URLSearchParams(new FormData(f));
    fields.set("decision", "approve");
    fields.set("passkey", "begin");
    const r = await fetch(f.action, {method: "POST", headers: {"Accept": "application/json"}, body: fields, credentials: "same-origin"});
    const j = await r.json();
    if (!r.ok) throw new Error(j.reason || String(r.status));
    const o = j.publicKey;
    o.challenge = b64(o.challenge);
    (o.allowCredentials || []).forEach((c) => { c.id = b64(c.id); });
    const cred = await navigator.credentials.get({publicKey: o});
    const a = cred.response;
    put("passkey_ceremony", j.ceremony);
    put("passkey_assertion", JSON.stringify({id: cred.id, rawId: u64(cred.rawId), type: cred.type,
      response: {clientDataJSON: u64(a.clientDataJSON), authenticatorData: u64(a.authenticatorData), signature: u64(a.signature),
        userHandle: a.userHandle ? u64(a.userHandle) : null},
      clientExtensionResults: cred.getClientExtensionResults()}));
    signed = true;
    status.textContent = "Signed; approving…";
    f.requestSubmit(button);
  } catch (e) {
    status.textContent = "Nothing was approved: " + e.message;
  }
});
})();`
