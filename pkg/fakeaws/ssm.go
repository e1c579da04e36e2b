package fakeaws

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

const ssmContentType = "application/x-amz-json-1.1"

// SSM limits from its API reference: a parameter name has 1 to 2,048
// characters; GetParameters takes 1 to 10 names.
const (
	maxSSMNameLen   = 2048
	maxSSMGetNames  = 10
	ssmValidationTy = "ValidationException"
)

// serveSSM answers AmazonSSM.GetParameter and GetParameters (AWS JSON 1.1)
// from the world's parameters: the EKS-optimized and Bottlerocket AMI
// public parameters and whatever SetParameter added. Calls are counted as
// "ssm:<Operation>".
func (s *Server) serveSSM(rw http.ResponseWriter, op string, body []byte) {
	rid := s.requestID()
	var handle func([]byte) (any, *sqsError)
	switch op {
	case "GetParameter":
		handle = s.ssmGetParameter
	case "GetParameters":
		handle = s.ssmGetParameters
	default:
		s.w.count("ssm:" + op)
		writeJSON(rw, ssmContentType, rid, nil, &sqsError{typ: "UnknownOperationException", msg: "operation " + op + " is not simulated", status: 400})
		return
	}
	if fault := s.admit("ssm:" + op); fault != nil {
		typ := "InternalServerError"
		status := 500
		if fault.Code == "RequestLimitExceeded" {
			typ, status = "ThrottlingException", 400
		}
		writeJSON(rw, ssmContentType, rid, nil, &sqsError{typ: typ, msg: fault.Message, status: status})
		return
	}
	out, e := handle(body)
	writeJSON(rw, ssmContentType, rid, out, e)
}

func ssmDecode(body []byte, v any) *sqsError {
	if err := decode(body, v); err != nil {
		var se *sqsError
		errors.As(err, &se)
		return &sqsError{typ: ssmValidationTy, msg: se.msg, status: 400}
	}
	return nil
}

func ssmValidation(format string, args ...any) *sqsError {
	return &sqsError{typ: ssmValidationTy, msg: "1 validation error detected: " + fmt.Sprintf(format, args...), status: 400}
}

func checkSSMName(name, member string) *sqsError {
	switch n := utf8.RuneCountInString(name); {
	case n < 1:
		return ssmValidation("Value '%s' at '%s' failed to satisfy constraint: Member must have length greater than or equal to 1", name, member)
	case n > maxSSMNameLen:
		return ssmValidation("Value '%s' at '%s' failed to satisfy constraint: Member must have length less than or equal to %d", name, member, maxSSMNameLen)
	}
	return nil
}

func (s *Server) ssmGetParameter(body []byte) (any, *sqsError) {
	var in struct{ Name string }
	if e := ssmDecode(body, &in); e != nil {
		return nil, e
	}
	if e := checkSSMName(in.Name, "name"); e != nil {
		return nil, e
	}
	value, ok := s.w.parameter(in.Name)
	if !ok {
		return nil, &sqsError{typ: "ParameterNotFound", status: 400}
	}
	return map[string]any{"Parameter": s.parameterJSON(in.Name, value)}, nil
}

// ssmGetParameters answers the names it knows in Parameters and lists the
// others in InvalidParameters, as SSM does; each name appears once.
func (s *Server) ssmGetParameters(body []byte) (any, *sqsError) {
	var in struct{ Names []string }
	if e := ssmDecode(body, &in); e != nil {
		return nil, e
	}
	switch n := len(in.Names); {
	case n < 1:
		return nil, ssmValidation("Value '[]' at 'names' failed to satisfy constraint: Member must have length greater than or equal to 1")
	case n > maxSSMGetNames:
		return nil, ssmValidation("Value '[%s]' at 'names' failed to satisfy constraint: Member must have length less than or equal to %d", strings.Join(in.Names, ", "), maxSSMGetNames)
	}
	params, invalid := []any{}, []string{}
	seen := map[string]bool{}
	for i, name := range in.Names {
		if e := checkSSMName(name, fmt.Sprintf("names.%d.member", i+1)); e != nil {
			return nil, e
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		if value, ok := s.w.parameter(name); ok {
			params = append(params, s.parameterJSON(name, value))
		} else {
			invalid = append(invalid, name)
		}
	}
	return map[string]any{"Parameters": params, "InvalidParameters": invalid}, nil
}

func (s *Server) parameterJSON(name, value string) map[string]any {
	return map[string]any{
		"Name":             name,
		"Type":             "String",
		"Value":            value,
		"Version":          1,
		"LastModifiedDate": float64(s.w.Now().Unix()),
		"ARN":              fmt.Sprintf("arn:aws:ssm:%s::parameter/%s", s.w.opts.Region, strings.TrimPrefix(name, "/")),
		"DataType":         "text",
	}
}

func (w *World) parameter(name string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.params[name]
	return v, ok
}
