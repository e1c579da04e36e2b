package fakeaws

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Server is the HTTP front end of a World: one handler serving EC2 (Query
// protocol, dispatched on the Action form field), IAM (Query protocol too,
// told apart by Version=2010-05-08; instance profiles only), SQS (AWS JSON 1.0,
// X-Amz-Target AmazonSQS.*) and SSM (AWS JSON 1.1, X-Amz-Target AmazonSSM.*),
// so every SDK client can share one BaseEndpoint. Signatures are not checked.
type Server struct {
	w    *World
	seq  atomic.Uint64
	ts   *httptest.Server
	ec2  map[string]ec2Handler
	sqsH map[string]sqsHandler
	// ext serves the Pricing and EKS APIs and, in policy mode, authorizes
	// every request first (server_ext.go).
	ext extensions
}

type ec2Handler func(p params) (func(x *xmlw), error)

// NewServer returns the handler for w. Use Start for a loopback test server.
func NewServer(w *World) *Server {
	s := &Server{w: w}
	s.ec2 = map[string]ec2Handler{
		"CreateFleet":                   s.createFleet,
		"DescribeInstances":             s.describeInstances,
		"TerminateInstances":            s.terminateInstances,
		"CreateTags":                    s.createTags,
		"DeleteTags":                    s.deleteTags,
		"CreateLaunchTemplate":          s.createLaunchTemplate,
		"DescribeLaunchTemplates":       s.describeLaunchTemplates,
		"DeleteLaunchTemplate":          s.deleteLaunchTemplate,
		"DescribeInstanceTypes":         s.describeInstanceTypes,
		"DescribeInstanceTypeOfferings": s.describeInstanceTypeOfferings,
		"DescribeSpotPriceHistory":      s.describeSpotPriceHistory,
		"DescribeSubnets":               s.describeSubnets,
		"DescribeSecurityGroups":        s.describeSecurityGroups,
		"DescribeImages":                s.describeImages,
		"DescribeAvailabilityZones":     s.describeAvailabilityZones,
		"DescribeCapacityReservations":  s.describeCapacityReservations,
	}
	s.sqsH = s.sqsHandlers()
	return s
}

// World returns the world the server fronts.
func (s *Server) World() *World { return s.w }

// Start serves on a loopback httptest server and returns its URL.
func (s *Server) Start() string {
	if s.ts == nil {
		s.ts = httptest.NewServer(s)
	}
	return s.ts.URL
}

// URL is the started server's URL ("" before Start).
func (s *Server) URL() string {
	if s.ts == nil {
		return ""
	}
	return s.ts.URL
}

// QueueURL is the URL of the named queue on the started server.
func (s *Server) QueueURL(name string) string {
	return s.URL() + "/" + s.w.opts.AccountID + "/" + name
}

// Close stops a started server.
func (s *Server) Close() {
	if s.ts != nil {
		s.ts.Close()
		s.ts = nil
	}
}

func (s *Server) requestID() string {
	n := s.seq.Add(1)
	return fmt.Sprintf("00000000-0000-4000-8000-%012x", n)
}

// MaxRequestBody is the largest request body the server reads. AWS
// documents no request-size limit for the EC2 and IAM Query APIs; SQS takes
// up to 1 MiB of message data per request, which JSON escaping can grow
// several-fold, so the fake allows 8 MiB. A larger body is refused whole with
// HTTP 413 in the service's error shape, never cut short and parsed as if it
// were complete.
const MaxRequestBody = 8 << 20

// ServeHTTP dispatches to the service the request is for.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBody+1))
	if err != nil {
		http.Error(rw, "reading body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if s.serveExtension(rw, r, body) {
		return
	}
	target := r.Header.Get("X-Amz-Target")
	if r.Method == http.MethodGet && target == "" && len(body) == 0 {
		// The Query APIs (EC2, IAM) take their parameters in the URL of a
		// GET as well as in a POST's form body: served the same way.
		body = []byte(r.URL.RawQuery)
	}
	if len(body) > MaxRequestBody || r.ContentLength > MaxRequestBody {
		s.refuseTooLarge(rw, target, body)
		return
	}
	switch {
	case strings.HasPrefix(target, "AmazonSQS."):
		s.serveSQS(rw, r, strings.TrimPrefix(target, "AmazonSQS."), body)
	case strings.HasPrefix(target, "AmazonSSM."):
		s.serveSSM(rw, strings.TrimPrefix(target, "AmazonSSM."), body)
	case isIAMRequest(body):
		s.serveIAM(rw, body)
	default:
		s.serveEC2(rw, body)
	}
}

// refuseTooLarge answers a body over MaxRequestBody in the error shape of
// the service it was meant for.
func (s *Server) refuseTooLarge(rw http.ResponseWriter, target string, body []byte) {
	rid := s.requestID()
	msg := fmt.Sprintf("The request body exceeds %d bytes, the largest the simulated AWS accepts.", MaxRequestBody)
	e := &sqsError{typ: "RequestEntityTooLarge", queryCode: "RequestEntityTooLarge;Sender", msg: msg, status: http.StatusRequestEntityTooLarge}
	switch {
	case strings.HasPrefix(target, "AmazonSQS."):
		s.w.count("sqs:" + strings.TrimPrefix(target, "AmazonSQS."))
		writeJSON(rw, "application/x-amz-json-1.0", rid, nil, e)
	case strings.HasPrefix(target, "AmazonSSM."):
		s.w.count("ssm:" + strings.TrimPrefix(target, "AmazonSSM."))
		writeJSON(rw, ssmContentType, rid, nil, e)
	case isIAMRequest(body):
		writeIAMError(rw, iamErr(e.status, e.typ, "%s", msg), rid)
	default:
		writeEC2Error(rw, apiErr(e.status, e.typ, "%s", msg), rid)
	}
}

func (s *Server) serveEC2(rw http.ResponseWriter, body []byte) {
	rid := s.requestID()
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		writeEC2Error(rw, apiErr(400, "MalformedQueryString", "%v", err), rid)
		return
	}
	action := vals.Get("Action")
	h, ok := s.ec2[action]
	if !ok {
		s.w.count(action)
		writeEC2Error(rw, apiErr(400, "InvalidAction", "The action %s is not valid for this web service.", action), rid)
		return
	}
	if fault := s.admit(action); fault != nil {
		writeEC2Error(rw, fault, rid)
		return
	}
	// DryRun asks whether the caller may call the action; the fake has no
	// permissions to check, so the answer is always the "would succeed" error.
	if vals.Get("DryRun") == "true" {
		writeEC2Error(rw, apiErr(412, "DryRunOperation", "Request would have succeeded, but DryRun flag is set."), rid)
		return
	}
	render, err := h(newParams(vals))
	if err != nil {
		writeEC2Error(rw, err, rid)
		return
	}
	rw.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	rw.Header().Set("x-amzn-RequestId", rid)
	_, _ = io.WriteString(rw, ec2Doc(action, rid, render))
}

// admit applies injected faults and latency to one call.
func (s *Server) admit(action string) *APIError {
	fault, latency := s.w.admit(action)
	if latency > 0 {
		time.Sleep(latency) // latency is a property of the wire, so it is real time
	}
	switch fault {
	case "RequestLimitExceeded":
		return apiErr(503, "RequestLimitExceeded", "Request limit exceeded.")
	case "InternalError":
		return apiErr(500, "InternalError", "An internal error has occurred.")
	}
	return nil
}

func writeEC2Error(rw http.ResponseWriter, err error, rid string) {
	var ae *APIError
	if !errors.As(err, &ae) {
		ae = apiErr(500, "InternalError", "%v", err)
	}
	rw.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	rw.Header().Set("x-amzn-RequestId", rid)
	status := ae.Status
	if status == 0 {
		status = 400
	}
	rw.WriteHeader(status)
	_, _ = io.WriteString(rw, ec2ErrorDoc(ae.Code, ae.Message, rid))
}

// count records a call that bypasses admit (unknown actions).
func (w *World) count(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stats[key]++
}
