package fakeaws

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
)

// extensions are the services served beside the core four: the Price List
// API (pricing.go), EKS DescribeCluster (eks.go), and the optional policy
// mode that authorizes every request before it is served (authz.go).
type extensions struct {
	mu       sync.Mutex
	clusters map[string]EKSCluster
	policy   *policyMode
}

// serveExtension answers the request when it is for an extension service,
// or when policy mode denies it; false hands it to the core dispatch.
func (s *Server) serveExtension(rw http.ResponseWriter, r *http.Request, body []byte) bool {
	target := r.Header.Get("X-Amz-Target")
	if s.deniedByPolicy(rw, r, target, body) {
		return true
	}
	switch {
	case strings.HasPrefix(target, pricingTargetPrefix):
		s.servePricing(rw, strings.TrimPrefix(target, pricingTargetPrefix), body)
		return true
	case isEKSRequest(r):
		s.serveEKS(rw, r)
		return true
	}
	return false
}

// writeJSONError writes an AWS JSON 1.1 or REST-JSON error: the code in
// the body's __type and, for REST-JSON clients, in X-Amzn-ErrorType.
func writeJSONError(rw http.ResponseWriter, ctype, rid string, status int, code, msg string) {
	rw.Header().Set("Content-Type", ctype)
	rw.Header().Set("x-amzn-RequestId", rid)
	rw.Header().Set("X-Amzn-ErrorType", code)
	rw.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"__type": code, "message": msg})
	_, _ = rw.Write(b)
}

func writeJSONBody(rw http.ResponseWriter, ctype, rid string, out any) {
	b, err := json.Marshal(out)
	if err != nil {
		writeJSONError(rw, ctype, rid, 500, "InternalFailure", err.Error())
		return
	}
	rw.Header().Set("Content-Type", ctype)
	rw.Header().Set("x-amzn-RequestId", rid)
	_, _ = rw.Write(b)
}
