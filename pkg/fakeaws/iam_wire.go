package fakeaws

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// iamVersion is the IAM API version; the Version form field is how a Query
// request for IAM is told from one for EC2 (2016-11-15) on the same URL.
const (
	iamVersion   = "2010-05-08"
	iamNamespace = "https://iam.amazonaws.com/doc/2010-05-08/"
)

// isIAMRequest reports whether a form body carries Version=2010-05-08. It
// scans the bytes instead of parsing the form so that EC2 requests, the hot
// path, are not decoded twice; values are URL-encoded, so "=" inside one
// cannot fake the field.
func isIAMRequest(body []byte) bool {
	const field = "Version=" + iamVersion
	for i := 0; ; {
		j := bytes.Index(body[i:], []byte(field))
		if j < 0 {
			return false
		}
		at := i + j
		end := at + len(field)
		if (at == 0 || body[at-1] == '&') && (end == len(body) || body[end] == '&') {
			return true
		}
		i = end
	}
}

// iamActions are the IAM actions simulated: instance profiles, and reading
// the roles they hold.
var iamActions = map[string]func(*Server, params) (func(x *xmlw), error){
	"CreateInstanceProfile":         (*Server).iamCreateInstanceProfile,
	"GetInstanceProfile":            (*Server).iamGetInstanceProfile,
	"ListInstanceProfiles":          (*Server).iamListInstanceProfiles,
	"ListInstanceProfilesForRole":   (*Server).iamListInstanceProfilesForRole,
	"AddRoleToInstanceProfile":      (*Server).iamAddRoleToInstanceProfile,
	"RemoveRoleFromInstanceProfile": (*Server).iamRemoveRoleFromInstanceProfile,
	"DeleteInstanceProfile":         (*Server).iamDeleteInstanceProfile,
	"TagInstanceProfile":            (*Server).iamTagInstanceProfile,
	"GetRole":                       (*Server).iamGetRole,
}

// serveIAM answers an IAM Query request. Calls are counted under
// "iam:<Action>"; injected throttles answer Throttling, injected server
// errors ServiceFailure, injected denials AccessDenied.
func (s *Server) serveIAM(rw http.ResponseWriter, body []byte) {
	rid := s.requestID()
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		writeIAMError(rw, iamErr(400, "MalformedQueryString", "%v", err), rid)
		return
	}
	action := vals.Get("Action")
	key := "iam:" + action
	h, ok := iamActions[action]
	if !ok {
		s.w.count(key)
		writeIAMError(rw, iamErr(400, "InvalidAction", "Could not find operation %s for version %s", action, iamVersion), rid)
		return
	}
	if fault := s.admit(key); fault != nil {
		switch fault.Code {
		case "RequestLimitExceeded":
			fault = iamErr(400, "Throttling", "Rate exceeded")
		default:
			fault = iamErr(500, "ServiceFailure", "%s", fault.Message)
		}
		writeIAMError(rw, fault, rid)
		return
	}
	if s.w.deny(key) {
		writeIAMError(rw, iamErr(403, "AccessDenied",
			"User: arn:aws:sts::%s:assumed-role/nodesmith/controller is not authorized to perform: %s because no identity-based policy allows the %s action",
			s.w.opts.AccountID, key, key), rid)
		return
	}
	render, err := h(s, newParams(vals))
	if err != nil {
		writeIAMError(rw, err, rid)
		return
	}
	rw.Header().Set("Content-Type", "text/xml")
	rw.Header().Set("x-amzn-RequestId", rid)
	_, _ = io.WriteString(rw, iamDoc(action, rid, render))
}

func (w *World) deny(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.denyLocked(key)
}

func (s *Server) iamCreateInstanceProfile(p params) (func(x *xmlw), error) {
	var v iamValidation
	name := v.required(p, "InstanceProfileName", "instanceProfileName", iamProfileName)
	path := v.optional(p, "Path", "path", iamPath)
	tags := v.tags(p)
	if err := v.err(); err != nil {
		return nil, err
	}
	ip, err := s.w.CreateInstanceProfile(name, path, tags)
	if err != nil {
		return nil, err
	}
	return func(x *xmlw) { s.instanceProfileXML(x, ip) }, nil
}

func (s *Server) iamGetInstanceProfile(p params) (func(x *xmlw), error) {
	var v iamValidation
	name := v.required(p, "InstanceProfileName", "instanceProfileName", iamProfileName)
	if err := v.err(); err != nil {
		return nil, err
	}
	ip, ok := s.w.GetInstanceProfile(name)
	if !ok {
		return nil, iamErr(404, "NoSuchEntity", "Instance Profile %s cannot be found.", name)
	}
	return func(x *xmlw) { s.instanceProfileXML(x, ip) }, nil
}

// iamListInstanceProfiles lists profiles by name, filtered by path prefix,
// MaxItems at a time; the Marker is the name to resume at.
func (s *Server) iamListInstanceProfiles(p params) (func(x *xmlw), error) {
	var v iamValidation
	prefix := v.optional(p, "PathPrefix", "pathPrefix", iamPathPrefix)
	marker := v.optional(p, "Marker", "marker", iamMarker)
	limit := v.maxItems(p)
	if err := v.err(); err != nil {
		return nil, err
	}
	if prefix == "" {
		prefix = "/"
	}
	var all []InstanceProfile
	for _, ip := range s.w.InstanceProfiles() {
		if strings.HasPrefix(ip.Path, prefix) {
			all = append(all, ip)
		}
	}
	return s.instanceProfilePage(all, marker, limit), nil
}

// iamListInstanceProfilesForRole lists the profiles that hold the role, in
// the pages ListInstanceProfiles uses; an unknown role is NoSuchEntity.
func (s *Server) iamListInstanceProfilesForRole(p params) (func(x *xmlw), error) {
	var v iamValidation
	role := v.required(p, "RoleName", "roleName", iamRoleName)
	marker := v.optional(p, "Marker", "marker", iamMarker)
	limit := v.maxItems(p)
	if err := v.err(); err != nil {
		return nil, err
	}
	if _, ok := s.w.role(role); !ok {
		return nil, iamErr(404, "NoSuchEntity", "The role with name %s cannot be found.", role)
	}
	var all []InstanceProfile
	for _, ip := range s.w.InstanceProfiles() {
		if slices.Contains(ip.Roles, role) {
			all = append(all, ip)
		}
	}
	return s.instanceProfilePage(all, marker, limit), nil
}

// instanceProfilePage renders the page of all (sorted by name) that starts
// at marker, the name to resume at.
func (s *Server) instanceProfilePage(all []InstanceProfile, marker string, limit int) func(x *xmlw) {
	from := 0
	if marker != "" {
		from = len(all)
		for i, ip := range all {
			if ip.Name >= marker {
				from = i
				break
			}
		}
	}
	to := min(len(all), from+limit)
	next := ""
	if to < len(all) {
		next = all[to].Name
	}
	return func(x *xmlw) {
		x.open("InstanceProfiles")
		for _, ip := range all[from:to] {
			x.open("member")
			s.instanceProfileBody(x, ip)
			x.close("member")
		}
		x.close("InstanceProfiles")
		x.leafBool("IsTruncated", next != "")
		if next != "" {
			x.leaf("Marker", next)
		}
	}
}

func (s *Server) iamGetRole(p params) (func(x *xmlw), error) {
	var v iamValidation
	name := v.required(p, "RoleName", "roleName", iamRoleName)
	if err := v.err(); err != nil {
		return nil, err
	}
	r, ok := s.w.role(name)
	if !ok {
		return nil, iamErr(404, "NoSuchEntity", "The role with name %s cannot be found.", name)
	}
	return func(x *xmlw) {
		x.open("Role")
		roleXML(x, r)
		x.leafInt("MaxSessionDuration", 3600)
		x.open("RoleLastUsed")
		x.close("RoleLastUsed")
		x.close("Role")
	}, nil
}

func (s *Server) iamAddRoleToInstanceProfile(p params) (func(x *xmlw), error) {
	return s.profileRoleCall(p, s.w.AddRoleToInstanceProfile)
}

func (s *Server) iamRemoveRoleFromInstanceProfile(p params) (func(x *xmlw), error) {
	return s.profileRoleCall(p, s.w.RemoveRoleFromInstanceProfile)
}

func (s *Server) profileRoleCall(p params, fn func(profile, role string) error) (func(x *xmlw), error) {
	var v iamValidation
	name := v.required(p, "InstanceProfileName", "instanceProfileName", iamProfileName)
	role := v.required(p, "RoleName", "roleName", iamRoleName)
	if err := v.err(); err != nil {
		return nil, err
	}
	if err := fn(name, role); err != nil {
		return nil, err
	}
	return func(*xmlw) {}, nil
}

func (s *Server) iamDeleteInstanceProfile(p params) (func(x *xmlw), error) {
	var v iamValidation
	name := v.required(p, "InstanceProfileName", "instanceProfileName", iamProfileName)
	if err := v.err(); err != nil {
		return nil, err
	}
	if err := s.w.DeleteInstanceProfile(name); err != nil {
		return nil, err
	}
	return func(*xmlw) {}, nil
}

func (s *Server) iamTagInstanceProfile(p params) (func(x *xmlw), error) {
	var v iamValidation
	name := v.required(p, "InstanceProfileName", "instanceProfileName", iamProfileName)
	tags := v.tags(p)
	if len(p.structs("Tags.member")) == 0 {
		v.msgs = append(v.msgs, "Value null at 'tags' failed to satisfy constraint: Member must not be null")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	if err := s.w.TagInstanceProfile(name, tags); err != nil {
		return nil, err
	}
	return func(*xmlw) {}, nil
}

// trustPolicy is the assume-role policy every simulated role has: EC2 may
// assume it. IAM returns policy documents URL-encoded.
const trustPolicy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}`

func roleXML(x *xmlw, r Role) {
	x.leaf("Path", "/")
	x.leaf("RoleName", r.Name)
	x.leaf("RoleId", r.ID)
	x.leaf("Arn", r.Arn)
	x.leaf("CreateDate", r.CreateDate.UTC().Format("2006-01-02T15:04:05Z"))
	x.leaf("AssumeRolePolicyDocument", url.QueryEscape(trustPolicy))
}

// instanceProfileXML renders <InstanceProfile> with its roles as IAM does
// (lists are <member> entries, element names UpperCamel).
func (s *Server) instanceProfileXML(x *xmlw, ip InstanceProfile) {
	x.open("InstanceProfile")
	s.instanceProfileBody(x, ip)
	x.close("InstanceProfile")
}

func (s *Server) instanceProfileBody(x *xmlw, ip InstanceProfile) {
	x.leaf("Path", ip.Path)
	x.leaf("InstanceProfileName", ip.Name)
	x.leaf("InstanceProfileId", ip.ID)
	x.leaf("Arn", ip.Arn)
	x.leaf("CreateDate", ip.CreateDate.UTC().Format("2006-01-02T15:04:05Z"))
	x.open("Roles")
	for _, name := range ip.Roles {
		r, ok := s.w.role(name)
		if !ok {
			continue
		}
		x.open("member")
		roleXML(x, r)
		x.close("member")
	}
	x.close("Roles")
	if len(ip.Tags) > 0 {
		x.open("Tags")
		for _, k := range sortedKeys(ip.Tags) {
			x.open("member")
			x.leaf("Key", k)
			x.leaf("Value", ip.Tags[k])
			x.close("member")
		}
		x.close("Tags")
	}
}

func (w *World) role(name string) (Role, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.roleLocked(name)
}

// iamDoc wraps a result in <ActionResponse><ActionResult> with the response metadata.
func iamDoc(action, requestID string, body func(x *xmlw)) string {
	var x xmlw
	x.b.WriteString(fmt.Sprintf(`<%sResponse xmlns="%s">`, action, iamNamespace))
	x.open(action + "Result")
	body(&x)
	x.close(action + "Result")
	x.open("ResponseMetadata")
	x.leaf("RequestId", requestID)
	x.close("ResponseMetadata")
	x.close(action + "Response")
	return x.b.String()
}

func writeIAMError(rw http.ResponseWriter, err error, rid string) {
	var ae *APIError
	if !errors.As(err, &ae) {
		ae = iamErr(500, "ServiceFailure", "%v", err)
	}
	typ := "Sender"
	if ae.Status >= 500 {
		typ = "Receiver"
	}
	status := ae.Status
	if status == 0 {
		status = 400
	}
	var x xmlw
	x.b.WriteString(fmt.Sprintf(`<ErrorResponse xmlns="%s">`, iamNamespace))
	x.open("Error")
	x.leaf("Type", typ)
	x.leaf("Code", ae.Code)
	x.leaf("Message", ae.Message)
	x.close("Error")
	x.leaf("RequestId", rid)
	x.close("ErrorResponse")
	rw.Header().Set("Content-Type", "text/xml")
	rw.Header().Set("x-amzn-RequestId", rid)
	rw.WriteHeader(status)
	_, _ = io.WriteString(rw, x.b.String())
}
