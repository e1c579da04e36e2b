package fakeaws

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

const ssmContentType = "application/x-amz-json-1.1"

// serveSSM answers AmazonSSM.GetParameter (AWS JSON 1.1) from the world's
// parameters: the EKS-optimized and Bottlerocket AMI public parameters and
// whatever SetParameter added.
func (s *Server) serveSSM(rw http.ResponseWriter, op string, body []byte) {
	rid := s.requestID()
	if op != "GetParameter" {
		s.w.count("ssm:" + op)
		writeJSON(rw, ssmContentType, rid, nil, &sqsError{typ: "UnknownOperationException", msg: "operation " + op + " is not simulated", status: 400})
		return
	}
	if fault := s.admit("ssm:GetParameter"); fault != nil {
		typ := "InternalServerError"
		status := 500
		if fault.Code == "RequestLimitExceeded" {
			typ, status = "ThrottlingException", 400
		}
		writeJSON(rw, ssmContentType, rid, nil, &sqsError{typ: typ, msg: fault.Message, status: status})
		return
	}
	var in struct{ Name string }
	if err := decode(body, &in); err != nil {
		var se *sqsError
		errors.As(err, &se)
		writeJSON(rw, ssmContentType, rid, nil, &sqsError{typ: "ValidationException", msg: se.msg, status: 400})
		return
	}
	name := in.Name
	value, ok := s.w.parameter(name)
	if !ok {
		writeJSON(rw, ssmContentType, rid, nil, &sqsError{typ: "ParameterNotFound", msg: "", status: 400})
		return
	}
	arnName := strings.TrimPrefix(name, "/")
	out := map[string]any{"Parameter": map[string]any{
		"Name":             name,
		"Type":             "String",
		"Value":            value,
		"Version":          1,
		"LastModifiedDate": float64(s.w.Now().Unix()),
		"ARN":              fmt.Sprintf("arn:aws:ssm:%s::parameter/%s", s.w.opts.Region, arnName),
		"DataType":         "text",
	}}
	writeJSON(rw, ssmContentType, rid, out, nil)
}

func (w *World) parameter(name string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.params[name]
	return v, ok
}
