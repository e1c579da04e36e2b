package fakeaws

import "net/http"

// policyMode is set when the server authorizes requests against a policy.
type policyMode struct{}

// deniedByPolicy answers a request the policy does not allow; false when
// there is no policy or it allows the request.
func (s *Server) deniedByPolicy(rw http.ResponseWriter, r *http.Request, target string, body []byte) bool {
	return false
}
