package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/shipkey/shipkey/store/audit"
)

// POST /v1/proof/{label} (and /v1/proof when one key is served): the token
// as GET /v1/token answers it, with a DPoP proof signed with the key's DPoP
// key for the request named in the JSON body {"method","url","nonce"}; the
// same rules (0600, peer uid, served keys, min_valid) apply.

// proofKey marks the token the proof endpoint asks of the token handler:
// not a hand-out of its own (the proof is recorded once signed).
type proofKey struct{}

// proofRequest is the body of POST /v1/proof.
type proofRequest struct {
	Method string `json:"method"`
	URL    string `json:"url"`
	// Nonce is the API's DPoP-Nonce, when it asked for one.
	Nonce string `json:"nonce,omitempty"`
}

// maxProofRequest bounds the body of POST /v1/proof.
const maxProofRequest = 16 << 10

func (h *tokenHandler) proof(w http.ResponseWriter, r *http.Request) {
	label := r.PathValue("label")
	var req proofRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxProofRequest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeServeError(w, http.StatusBadRequest, "invalid_request", `the body is not {"method":"GET","url":"https://…"}: `+err.Error())
		return
	}
	method, err := proofMethod(req.Method)
	if err != nil {
		writeServeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("method %q is not an HTTP method such as GET or POST", req.Method))
		return
	}
	// The token first, as GET /v1/token answers it: served keys, min_valid,
	// renewal and its errors.
	var tok bufferedResponse
	h.token(&tok, r.WithContext(context.WithValue(r.Context(), proofKey{}, true)))
	if tok.status != http.StatusOK {
		tok.copyTo(w)
		return
	}
	var doc proofDoc
	if err := json.Unmarshal(tok.body.Bytes(), &doc); err != nil {
		writeServeError(w, http.StatusInternalServerError, "internal_error", err.Error())
		return
	}
	key, err := h.st.Key(label)
	if err != nil {
		writeServeFailure(w, err)
		return
	}
	target, err := proofTarget(req.URL, key)
	if err != nil {
		writeServeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	dpop, err := h.svc.DPoP(key)
	if err != nil {
		writeServeFailure(w, err)
		return
	}
	if dpop == nil {
		writeServeError(w, http.StatusBadRequest, "not_dpop", noDPoPKeyError(label).Error())
		return
	}
	if doc.DPoPProof, err = dpop.Proof(method, target, doc.AccessToken, req.Nonce, time.Now()); err != nil {
		writeServeFailure(w, err)
		return
	}
	doc.JKT = dpop.JKT()
	if err := h.svc.Record(label, exchangeFromQuery(r.URL.Query()), *peerOf(r.Context(), audit.Proof, h.via), doc.AccessToken); err != nil {
		writeServeFailure(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = writeJSON(w, doc)
}

// writeServeFailure answers a failure with its status (serveErrorStatus).
func writeServeFailure(w http.ResponseWriter, err error) {
	status, code := serveErrorStatus(err)
	writeServeError(w, status, code, err.Error())
}

// bufferedResponse keeps an answer in memory (a few hundred bytes of
// token JSON), so that the proof handler can build on the token handler's.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header {
	if b.header == nil {
		b.header = http.Header{}
	}
	return b.header
}

func (b *bufferedResponse) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}

// copyTo sends the kept answer on w.
func (b *bufferedResponse) copyTo(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	w.WriteHeader(b.status)
	_, _ = w.Write(b.body.Bytes())
}
