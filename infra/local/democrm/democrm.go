package democrm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxBody caps request bodies.
const maxBody = 1 << 20

// Contact is a person in the CRM.
type Contact struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Email    string `json:"email"`
	Company  string `json:"company,omitempty"`
	Archived bool   `json:"archived"`
	// OpenPayments are payments owed to the contact and not yet sent:
	// what a person deleting the contact should know.
	OpenPayments []OpenPayment `json:"open_payments,omitempty"`
}

// OpenPayment is a payment owed to a contact.
type OpenPayment struct {
	ID       string      `json:"id"`
	Amount   json.Number `json:"amount"`
	Currency string      `json:"currency"`
	Due      string      `json:"due"`
}

// Account is a customer account.
type Account struct {
	ID     int    `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"` // "open" or "closed"
}

// Payment is a payment that was sent.
type Payment struct {
	ID       string      `json:"id"` // pay_1, pay_2, ...
	Amount   json.Number `json:"amount"`
	Currency string      `json:"currency"`
	To       string      `json:"to"`
	Status   string      `json:"status"` // "sent"
}

// Recorded is one request as the server received it.
type Recorded struct {
	Method         string
	Path           string // escaped, as on the wire: /contacts/12
	RawQuery       string
	Body           []byte
	IdempotencyKey string
	Header         http.Header
	Replayed       bool // answered from the idempotency cache; no work was done
}

// Server is the demo CRM. Create it with New; it is safe for concurrent use.
type Server struct {
	mux *http.ServeMux

	mu          sync.Mutex // guards everything below; held for the whole of a request
	contacts    map[int]*Contact
	accounts    map[int]*Account
	payments    []Payment
	nextContact int
	nextPayment int
	idem        map[string]*captured
	recorded    []Recorded
	unrecorded  bool      // SetRecording(false)
	log         io.Writer // SetLog; nil logs nothing
}

// ReceivedPath is the route that lists what the server received
// (GET only). It is the demo's own: it is not recorded, never logged, and
// no endpoint of the shipped configuration lists it, so the gateway
// refuses to forward to it (unknown_operation).
const ReceivedPath = "/_received"

var _ http.Handler = (*Server)(nil)

// New returns a server seeded with contacts 1..20, accounts 1..5 and no payments.
func New() *Server {
	s := &Server{mux: http.NewServeMux()}
	s.seed()
	s.mux.HandleFunc("GET /contacts", s.listContacts)
	s.mux.HandleFunc("POST /contacts", s.createContact)
	s.mux.HandleFunc("POST /contacts/purge", s.purgeContacts)
	s.mux.HandleFunc("GET /contacts/{id}", s.getContact)
	s.mux.HandleFunc("PATCH /contacts/{id}", s.patchContact)
	s.mux.HandleFunc("DELETE /contacts/{id}", s.deleteContact)
	s.mux.HandleFunc("POST /contacts/{id}/archive", s.archiveContact)
	s.mux.HandleFunc("GET /payments", s.listPayments)
	s.mux.HandleFunc("POST /payments", s.createPayment)
	s.mux.HandleFunc("POST /payouts", s.createPayment) // a payment out of the company; the demo policy wants two people for it
	s.mux.HandleFunc("GET /accounts/{id}", s.getAccount)
	s.mux.HandleFunc("POST /accounts/{id}/close", s.closeAccount)
	s.mux.HandleFunc("DELETE /accounts/{id}", s.deleteAccount)
	return s
}

var seedNames = []string{
	"Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov",
	"Donald Knuth", "Margaret Hamilton", "Ken Thompson", "Frances Allen", "Dennis Ritchie",
	"Radia Perlman", "John McCarthy", "Katherine Johnson", "Tony Hoare", "Shafi Goldwasser",
	"Leslie Lamport", "Hedy Lamarr", "Niklaus Wirth", "Adele Goldberg", "Rob Pike",
}

var seedAccounts = []string{"Northwind Traders", "Contoso", "Globex", "Initech", "Umbrella"}

// seed sets the data to its initial state; the caller holds mu or owns s.
func (s *Server) seed() {
	s.contacts = make(map[int]*Contact, len(seedNames))
	for i, name := range seedNames {
		id := i + 1
		email := strings.ToLower(strings.ReplaceAll(name, " ", ".")) + "@example.com"
		s.contacts[id] = &Contact{ID: id, Name: name, Email: email, Company: seedAccounts[i%len(seedAccounts)]}
	}
	// Some contacts are owed money: deleting one loses track of it.
	for i, id := range []int{3, 7, 12} {
		s.contacts[id].OpenPayments = []OpenPayment{{ID: fmt.Sprintf("inv_%d", 101+i),
			Amount: json.Number(fmt.Sprintf("%d.00", 1200*(i+1))), Currency: "EUR", Due: "2026-12-31"}}
	}
	s.nextContact = len(seedNames) + 1
	s.accounts = make(map[int]*Account, len(seedAccounts))
	for i, name := range seedAccounts {
		s.accounts[i+1] = &Account{ID: i + 1, Name: name, Status: "open"}
	}
	s.payments = nil
	s.nextPayment = 1
	s.idem = make(map[string]*captured)
	s.recorded = nil
}

// Reset returns the server to its state after New: seed data, no recorded requests and no
// idempotency keys.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seed()
}

// SetRecording turns the recording of requests on (the default) or off.
// Off, Requests and Count see nothing new: a long benchmark run would
// otherwise keep every request it sent.
func (s *Server) SetRecording(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unrecorded = !on
}

// SetLog makes the server write one line to w for every request it
// receives, before it answers: "demo CRM received DELETE /contacts/12
// (Idempotency-Key: cf_...:0)", with "replayed" when the answer came from
// the idempotency cache. nil turns it off (the default).
func (s *Server) SetLog(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = w
}

// Requests returns a copy of every request received so far, oldest first.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Recorded, len(s.recorded))
	for i, r := range s.recorded {
		r.Body = slices.Clone(r.Body)
		r.Header = r.Header.Clone()
		out[i] = r
	}
	return out
}

// Count returns how many requests arrived with this method and exact escaped path
// (replays included; see Recorded.Replayed).
func (s *Server) Count(method, path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.recorded {
		if r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}

// Contact returns the contact with this id, if it exists.
func (s *Server) Contact(id int) (Contact, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.contacts[id]
	if !ok {
		return Contact{}, false
	}
	return *c, true
}

// Payments returns the payments made so far, oldest first.
func (s *Server) Payments() []Payment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.payments)
}

// ServeHTTP records the request, answers a replayed Idempotency-Key from the cache and
// otherwise routes the request, all under one lock so concurrent requests with the same key
// do the work once.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == ReceivedPath {
		s.serveReceived(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody("reading body: "+err.Error()))
		return
	}
	if len(body) > maxBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody("body over 1 MiB"))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	key := r.Header.Get("Idempotency-Key")
	rec := Recorded{
		Method:         r.Method,
		Path:           r.URL.EscapedPath(),
		RawQuery:       r.URL.RawQuery,
		Body:           body,
		IdempotencyKey: key,
		Header:         r.Header.Clone(),
	}
	useKey := key != "" && r.Method != http.MethodGet && r.Method != http.MethodHead

	s.mu.Lock()
	if c, ok := s.idem[key]; useKey && ok {
		rec.Replayed = true
		s.record(rec)
		s.mu.Unlock()
		w.Header().Set("Idempotent-Replayed", "true")
		c.writeTo(w)
		return
	}
	s.record(rec)
	c := &captured{header: http.Header{}}
	s.route(c, r)
	if useKey {
		s.idem[key] = c
	}
	s.mu.Unlock()
	c.writeTo(w)
}

// record keeps rec unless recording is off, and logs it; the caller holds mu.
func (s *Server) record(rec Recorded) {
	if !s.unrecorded {
		s.recorded = append(s.recorded, rec)
	}
	if s.log != nil {
		fmt.Fprintln(s.log, logLine(rec))
	}
}

// logLine describes rec on one line. The path and key are quoted only when
// they hold something a terminal would interpret (they come from the
// network).
func logLine(rec Recorded) string {
	line := "demo CRM received " + printable(rec.Method) + " " + printable(rec.Path)
	if rec.RawQuery != "" {
		line += "?" + printable(rec.RawQuery)
	}
	if rec.IdempotencyKey != "" {
		line += " (Idempotency-Key: " + printable(rec.IdempotencyKey) + ")"
	}
	if rec.Replayed {
		line += ", replayed from the idempotency cache: nothing done again"
	}
	return line
}

func printable(s string) string {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return strconv.Quote(s)
		}
	}
	return s
}

// Received is one request in the answer of GET /_received.
type Received struct {
	Method         string `json:"method"`
	Path           string `json:"path"`
	Query          string `json:"query,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	Replayed       bool   `json:"replayed"`
}

// serveReceived answers GET /_received with every request received so far,
// oldest first, and how many times each write (any method but GET and
// HEAD) reached the CRM's handlers: {"requests": [...], "writes":
// {"DELETE /contacts/12": 1}}. A write answered from the idempotency cache
// is listed but not counted: nothing was done again.
func (s *Server) serveReceived(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeJSON(w, http.StatusMethodNotAllowed, errorBody("GET "+ReceivedPath+" lists what the demo received"))
		return
	}
	reqs := s.Requests()
	out := make([]Received, len(reqs))
	writes := map[string]int{}
	for i, rec := range reqs {
		out[i] = Received{Method: rec.Method, Path: rec.Path, Query: rec.RawQuery, IdempotencyKey: rec.IdempotencyKey, Replayed: rec.Replayed}
		if rec.Method != http.MethodGet && rec.Method != http.MethodHead && !rec.Replayed {
			writes[rec.Method+" "+rec.Path]++
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"requests": out, "writes": writes})
}

// route serves r from the mux; unmatched requests get a JSON 404 or 405.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern == "" {
		// Let the mux decide between 404 and 405 (and set Allow), then answer in JSON.
		probe := &captured{header: http.Header{}}
		s.mux.ServeHTTP(probe, r)
		if allow := probe.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		status := probe.status
		if status == 0 {
			status = http.StatusNotFound
		}
		writeJSON(w, status, errorBody(fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// captured is a buffered response, kept for idempotent replays.
type captured struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (c *captured) Header() http.Header { return c.header }

func (c *captured) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *captured) Write(b []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	return c.body.Write(b)
}

func (c *captured) writeTo(w http.ResponseWriter) {
	maps.Copy(w.Header(), c.header)
	status := c.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	w.Write(c.body.Bytes())
}

// Handlers below run with s.mu held.

func (s *Server) listContacts(w http.ResponseWriter, r *http.Request) {
	out := make([]Contact, 0, len(s.contacts))
	for _, id := range slices.Sorted(maps.Keys(s.contacts)) {
		out = append(out, *s.contacts[id])
	}
	writeJSON(w, http.StatusOK, map[string]any{"contacts": out})
}

type contactInput struct {
	Name    *string `json:"name"`
	Email   *string `json:"email"`
	Company *string `json:"company"`
}

func (s *Server) createContact(w http.ResponseWriter, r *http.Request) {
	var in contactInput
	if !readJSON(w, r, &in) {
		return
	}
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		writeJSON(w, http.StatusBadRequest, errorBody("name is required"))
		return
	}
	c := &Contact{ID: s.nextContact, Name: *in.Name}
	if in.Email != nil {
		c.Email = *in.Email
	}
	if in.Company != nil {
		c.Company = *in.Company
	}
	s.nextContact++
	s.contacts[c.ID] = c
	w.Header().Set("Location", "/contacts/"+strconv.Itoa(c.ID))
	writeJSON(w, http.StatusCreated, c)
}

func (s *Server) purgeContacts(w http.ResponseWriter, r *http.Request) {
	purged := []int{}
	for _, id := range slices.Sorted(maps.Keys(s.contacts)) {
		if s.contacts[id].Archived {
			delete(s.contacts, id)
			purged = append(purged, id)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"purged": purged})
}

// contact finds the contact named by {id} or writes a 404.
func (s *Server) contact(w http.ResponseWriter, r *http.Request) (*Contact, bool) {
	return byID(w, r, s.contacts, "contact")
}

// byID finds the record of m named by {id} or writes a 404 naming what.
func byID[T any](w http.ResponseWriter, r *http.Request, m map[int]*T, what string) (*T, bool) {
	id, err := strconv.Atoi(r.PathValue("id"))
	v, ok := m[id]
	if err != nil || !ok {
		writeJSON(w, http.StatusNotFound, errorBody(what+" "+r.PathValue("id")+" not found"))
		return nil, false
	}
	return v, true
}

func (s *Server) getContact(w http.ResponseWriter, r *http.Request) {
	if c, ok := s.contact(w, r); ok {
		writeJSON(w, http.StatusOK, c)
	}
}

func (s *Server) patchContact(w http.ResponseWriter, r *http.Request) {
	c, ok := s.contact(w, r)
	if !ok {
		return
	}
	var in contactInput
	if !readJSON(w, r, &in) {
		return
	}
	if in.Name != nil {
		if strings.TrimSpace(*in.Name) == "" {
			writeJSON(w, http.StatusBadRequest, errorBody("name must not be empty"))
			return
		}
		c.Name = *in.Name
	}
	if in.Email != nil {
		c.Email = *in.Email
	}
	if in.Company != nil {
		c.Company = *in.Company
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) deleteContact(w http.ResponseWriter, r *http.Request) {
	if c, ok := s.contact(w, r); ok {
		delete(s.contacts, c.ID)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) archiveContact(w http.ResponseWriter, r *http.Request) {
	if c, ok := s.contact(w, r); ok {
		c.Archived = true
		writeJSON(w, http.StatusOK, c)
	}
}

func (s *Server) listPayments(w http.ResponseWriter, r *http.Request) {
	out := s.payments
	if out == nil {
		out = []Payment{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"payments": out})
}

func (s *Server) createPayment(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Amount   json.Number `json:"amount"`
		Currency string      `json:"currency"`
		To       string      `json:"to"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	amount, err := in.Amount.Float64()
	switch {
	case in.Amount == "" || err != nil || amount <= 0:
		writeJSON(w, http.StatusBadRequest, errorBody("amount must be a positive number"))
		return
	case len(in.Currency) != 3 || strings.ToUpper(in.Currency) != in.Currency:
		writeJSON(w, http.StatusBadRequest, errorBody("currency must be a three-letter code such as EUR"))
		return
	case strings.TrimSpace(in.To) == "":
		writeJSON(w, http.StatusBadRequest, errorBody("to is required"))
		return
	}
	p := Payment{ID: "pay_" + strconv.Itoa(s.nextPayment), Amount: in.Amount, Currency: in.Currency, To: in.To, Status: "sent"}
	s.nextPayment++
	s.payments = append(s.payments, p)
	w.Header().Set("Location", "/payments/"+p.ID)
	writeJSON(w, http.StatusCreated, p)
}

// account finds the account named by {id} or writes a 404.
func (s *Server) account(w http.ResponseWriter, r *http.Request) (*Account, bool) {
	return byID(w, r, s.accounts, "account")
}

func (s *Server) getAccount(w http.ResponseWriter, r *http.Request) {
	if a, ok := s.account(w, r); ok {
		writeJSON(w, http.StatusOK, a)
	}
}

func (s *Server) closeAccount(w http.ResponseWriter, r *http.Request) {
	a, ok := s.account(w, r)
	if !ok {
		return
	}
	if a.Status == "closed" {
		writeJSON(w, http.StatusConflict, errorBody("account already closed"))
		return
	}
	a.Status = "closed"
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) deleteAccount(w http.ResponseWriter, r *http.Request) {
	if a, ok := s.account(w, r); ok {
		delete(s.accounts, a.ID)
		w.WriteHeader(http.StatusNoContent)
	}
}

// readJSON decodes the body strictly into v or writes a 400.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data")
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody("invalid JSON body: "+err.Error()))
		return false
	}
	return true
}

func errorBody(msg string) map[string]string { return map[string]string{"error": msg} }

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
