package fakeaws

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/nodesmith/nodesmith/pkg/fakeaws/iampolicy"
)

// policyMode holds the policy every request is authorized against.
type policyMode struct {
	policy    *iampolicy.Policy
	principal string

	mu       sync.Mutex
	allowed  map[string]int
	denied   []Denial
	onDenial func(Denial)
}

// Denial is one refused request: the action and resource AWS would name.
type Denial struct {
	Action, Resource string
	Explicit         bool
}

// EnforcePolicy turns on policy mode: every request is authorized against
// p as the identity policy of principal (an assumed-role ARN, for messages)
// before it is served, the way IAM authorizes a caller with that one policy.
// The fake builds, per call, the actions AWS checks (a CreateFleet is also
// RunInstances on every resource it touches, CreateTags on what it tags,
// iam:PassRole for an instance profile's role), the ARNs of the resources,
// and the condition context (aws:RequestedRegion, aws:RequestTag/*,
// aws:TagKeys, aws:ResourceTag/*, ec2:CreateAction, iam:PassedToService).
// A denied EC2 call answers UnauthorizedOperation with an encoded message,
// IAM AccessDenied, the JSON services AccessDeniedException (SQS
// AccessDenied) — each naming the action and resource. nil turns it off.
func (s *Server) EnforcePolicy(p *iampolicy.Policy, principal string) {
	s.ext.mu.Lock()
	defer s.ext.mu.Unlock()
	if p == nil {
		s.ext.policy = nil
		return
	}
	if principal == "" {
		principal = fmt.Sprintf("arn:aws:sts::%s:assumed-role/nodesmith-controller/fake", s.w.opts.AccountID)
	}
	s.ext.policy = &policyMode{policy: p, principal: principal, allowed: map[string]int{}}
}

// OnDenial makes policy mode call fn for every refused request (cmd/fake-aws
// logs them). Call it after EnforcePolicy.
func (s *Server) OnDenial(fn func(Denial)) {
	if pm := s.policyMode(); pm != nil {
		pm.mu.Lock()
		pm.onDenial = fn
		pm.mu.Unlock()
	}
}

// AuthorizedActions counts, per action, the authorizations policy mode
// granted: what a run of the product actually needed.
func (s *Server) AuthorizedActions() map[string]int {
	pm := s.policyMode()
	if pm == nil {
		return nil
	}
	pm.mu.Lock()
	defer pm.mu.Unlock()
	out := make(map[string]int, len(pm.allowed))
	for k, v := range pm.allowed {
		out[k] = v
	}
	return out
}

// Denials lists the requests policy mode refused, in order.
func (s *Server) Denials() []Denial {
	pm := s.policyMode()
	if pm == nil {
		return nil
	}
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return append([]Denial(nil), pm.denied...)
}

func (s *Server) policyMode() *policyMode {
	s.ext.mu.Lock()
	defer s.ext.mu.Unlock()
	return s.ext.policy
}

// deniedByPolicy answers a request the policy does not allow; false when
// there is no policy or it allows the request.
func (s *Server) deniedByPolicy(rw http.ResponseWriter, r *http.Request, target string, body []byte) bool {
	pm := s.policyMode()
	if pm == nil {
		return false
	}
	service, reqs := s.authorizations(r, target, body)
	for _, req := range reqs {
		d := pm.policy.Evaluate(req)
		if d.Allowed {
			continue
		}
		den := Denial{Action: req.Action, Resource: req.Resource, Explicit: d.ExplicitDeny}
		pm.mu.Lock()
		pm.denied = append(pm.denied, den)
		fn := pm.onDenial
		pm.mu.Unlock()
		if fn != nil {
			fn(den)
		}
		s.w.count(req.Action)
		s.writeDenied(rw, service, pm.principal, req, d)
		return true
	}
	pm.mu.Lock()
	for _, req := range reqs {
		pm.allowed[req.Action]++
	}
	pm.mu.Unlock()
	return false
}

func (s *Server) writeDenied(rw http.ResponseWriter, service, principal string, req iampolicy.Request, d iampolicy.Decision) {
	rid := s.requestID()
	why := "because no identity-based policy allows the " + req.Action + " action"
	if d.ExplicitDeny {
		why = "with an explicit deny in an identity-based policy"
	}
	msg := fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s %s", principal, req.Action, req.Resource, why)
	switch service {
	case "ec2":
		detail, _ := json.Marshal(map[string]any{"allowed": false, "explicitDeny": d.ExplicitDeny,
			"context": map[string]any{"principal": principal, "action": req.Action, "resource": req.Resource, "conditions": req.Context}})
		writeEC2Error(rw, apiErr(403, "UnauthorizedOperation", "You are not authorized to perform this operation. %s. Encoded authorization failure message: %s",
			msg, base64.RawURLEncoding.EncodeToString(detail)), rid)
	case "iam":
		writeIAMError(rw, iamErr(403, "AccessDenied", "%s", msg), rid)
	case "sqs":
		writeJSON(rw, "application/x-amz-json-1.0", rid, nil, &sqsError{typ: "AccessDenied", queryCode: "AccessDenied;Sender", msg: msg, status: 403})
	case "eks":
		writeJSONError(rw, eksContentType, rid, 403, "AccessDeniedException", msg)
	default: // ssm, pricing
		writeJSONError(rw, pricingContentType, rid, 400, "AccessDeniedException", msg)
	}
}

// authorizations are the checks AWS makes for one request.
func (s *Server) authorizations(r *http.Request, target string, body []byte) (string, []iampolicy.Request) {
	region := s.w.opts.Region
	base := func() map[string][]string { return map[string][]string{"aws:RequestedRegion": {region}} }
	one := func(action, resource string) []iampolicy.Request {
		return []iampolicy.Request{{Action: action, Resource: resource, Context: base()}}
	}
	switch {
	case strings.HasPrefix(target, "AmazonSQS."):
		var in struct{ QueueUrl, QueueName string }
		_ = json.Unmarshal(body, &in)
		name := in.QueueName
		if in.QueueUrl != "" {
			name = in.QueueUrl[strings.LastIndex(in.QueueUrl, "/")+1:]
		}
		return "sqs", one(iampolicy.PermissionFor("sqs:"+strings.TrimPrefix(target, "AmazonSQS.")), s.w.queueARN(name))
	case strings.HasPrefix(target, "AmazonSSM."):
		var in struct{ Name string }
		_ = json.Unmarshal(body, &in)
		arn := fmt.Sprintf("arn:aws:ssm:%s:%s:parameter%s", region, s.w.opts.AccountID, in.Name)
		if strings.HasPrefix(in.Name, "/aws/service/") {
			arn = fmt.Sprintf("arn:aws:ssm:%s::parameter%s", region, in.Name) // public parameters belong to no account
		}
		return "ssm", one("ssm:"+strings.TrimPrefix(target, "AmazonSSM."), arn)
	case strings.HasPrefix(target, pricingTargetPrefix):
		return "pricing", one("pricing:"+strings.TrimPrefix(target, pricingTargetPrefix), "*")
	case isEKSRequest(r):
		return "eks", one("eks:DescribeCluster", s.clusterARN(eksClusterName(r)))
	case target != "":
		return "unknown", nil
	}
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		return "ec2", nil // the service answers the malformed request
	}
	if isIAMRequest(body) {
		return "iam", s.iamAuthorizations(newParams(vals))
	}
	return "ec2", s.ec2Authorizations(newParams(vals), base)
}

// tagContext adds aws:RequestTag/* and aws:TagKeys for tags.
func tagContext(ctx map[string][]string, prefix string, tags map[string]string) {
	keys := make([]string, 0, len(tags))
	for k, v := range tags {
		ctx[prefix+k] = []string{v}
		keys = append(keys, k)
	}
	if prefix == "aws:RequestTag/" && len(keys) > 0 {
		sort.Strings(keys)
		ctx["aws:TagKeys"] = keys
	}
}

func (s *Server) ec2ARN(kind, id string) string {
	if kind == "image" || kind == "snapshot" {
		return fmt.Sprintf("arn:aws:ec2:%s::%s/%s", s.w.opts.Region, kind, id)
	}
	return fmt.Sprintf("arn:aws:ec2:%s:%s:%s/%s", s.w.opts.Region, s.w.opts.AccountID, kind, id)
}

func (s *Server) ec2Authorizations(p params, base func() map[string][]string) []iampolicy.Request {
	action := "ec2:" + p.get("Action")
	with := func(a, resource string, add func(map[string][]string)) iampolicy.Request {
		ctx := base()
		if add != nil {
			add(ctx)
		}
		return iampolicy.Request{Action: a, Resource: resource, Context: ctx}
	}
	switch p.get("Action") {
	case "CreateLaunchTemplate":
		tags := p.tagSpecs("TagSpecification")["launch-template"]
		req := func(ctx map[string][]string) { tagContext(ctx, "aws:RequestTag/", tags) }
		out := []iampolicy.Request{with(action, s.ec2ARN("launch-template", "*"), req)}
		if len(tags) > 0 {
			out = append(out, with("ec2:CreateTags", s.ec2ARN("launch-template", "*"), func(ctx map[string][]string) {
				req(ctx)
				ctx["ec2:CreateAction"] = []string{"CreateLaunchTemplate"}
			}))
		}
		return out
	case "DeleteLaunchTemplate":
		lt := s.templateNamed(p.get("LaunchTemplateId"), p.get("LaunchTemplateName"))
		return []iampolicy.Request{with(action, s.ec2ARN("launch-template", lt.ID), func(ctx map[string][]string) {
			tagContext(ctx, "aws:ResourceTag/", lt.Tags)
		})}
	case "TerminateInstances":
		var out []iampolicy.Request
		for _, id := range p.list("InstanceId") {
			in, _ := s.w.Instance(id)
			out = append(out, with(action, s.ec2ARN("instance", id), func(ctx map[string][]string) { tagContext(ctx, "aws:ResourceTag/", in.Tags) }))
		}
		return out
	case "CreateTags":
		tags := p.tags("Tag")
		var out []iampolicy.Request
		for _, id := range p.list("ResourceId") {
			kind, have := s.resourceOf(id)
			out = append(out, with(action, s.ec2ARN(kind, id), func(ctx map[string][]string) {
				tagContext(ctx, "aws:ResourceTag/", have)
				tagContext(ctx, "aws:RequestTag/", tags)
			}))
		}
		return out
	case "CreateFleet":
		return s.fleetAuthorizations(p, with)
	}
	return []iampolicy.Request{with(action, "*", nil)}
}

// fleetAuthorizations: CreateFleet on the fleet, and CreateFleet and
// RunInstances on everything the launch creates (with the request's tags)
// or uses (with the resource's tags), CreateTags for tagging on create, and
// iam:PassRole for the instance profile's role.
func (s *Server) fleetAuthorizations(p params, with func(string, string, func(map[string][]string)) iampolicy.Request) []iampolicy.Request {
	specs := p.tagSpecs("TagSpecification")
	reqTags := map[string]string{}
	for _, tags := range specs {
		for k, v := range tags {
			reqTags[k] = v
		}
	}
	created := func(ctx map[string][]string) { tagContext(ctx, "aws:RequestTag/", reqTags) }
	out := []iampolicy.Request{with("ec2:CreateFleet", s.ec2ARN("fleet", "*"), created)}
	kinds := []string{"instance", "volume", "network-interface"}
	if strings.EqualFold(p.get("TargetCapacitySpecification.DefaultTargetCapacityType"), CapacitySpot) {
		kinds = append(kinds, "spot-instances-request")
	}
	for _, k := range kinds {
		for _, a := range []string{"ec2:CreateFleet", "ec2:RunInstances"} {
			out = append(out, with(a, s.ec2ARN(k, "*"), created))
		}
	}
	if len(reqTags) > 0 {
		for _, k := range append([]string{"fleet"}, kinds...) {
			out = append(out, with("ec2:CreateTags", s.ec2ARN(k, "*"), func(ctx map[string][]string) {
				created(ctx)
				ctx["ec2:CreateAction"] = []string{"CreateFleet"}
			}))
		}
	}
	used := map[string]map[string]string{} // ARN → its tags
	var roles []string
	for _, cfg := range p.structs("LaunchTemplateConfigs") {
		spec := cfg + ".LaunchTemplateSpecification"
		lt := s.templateNamed(p.get(spec+".LaunchTemplateId"), p.get(spec+".LaunchTemplateName"))
		used[s.ec2ARN("launch-template", lt.ID)] = lt.Tags
		if lt.ImageID != "" {
			used[s.ec2ARN("image", lt.ImageID)] = nil
		}
		for _, g := range lt.SecurityGroupIDs {
			used[s.ec2ARN("security-group", g)] = nil
		}
		if id := lt.Data["CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"]; id != "" {
			// Launching into a reservation uses it, as EC2 authorizes it.
			used[s.ec2ARN("capacity-reservation", id)] = nil
		}
		if name := lt.Data["LaunchTemplateData.IamInstanceProfile.Name"]; name != "" {
			if ip, ok := s.w.GetInstanceProfile(name); ok {
				roles = append(roles, ip.Roles...)
			}
		}
		for _, o := range p.structs(cfg + ".Overrides") {
			if id := p.get(o + ".SubnetId"); id != "" {
				used[s.ec2ARN("subnet", id)] = nil
			}
		}
	}
	arns := make([]string, 0, len(used))
	for a := range used {
		arns = append(arns, a)
	}
	sort.Strings(arns)
	for _, arn := range arns {
		tags := used[arn]
		for _, a := range []string{"ec2:CreateFleet", "ec2:RunInstances"} {
			out = append(out, with(a, arn, func(ctx map[string][]string) { tagContext(ctx, "aws:ResourceTag/", tags) }))
		}
	}
	for _, role := range roles {
		out = append(out, with("iam:PassRole", s.w.iamArn("role", "/", role), func(ctx map[string][]string) {
			ctx["iam:PassedToService"] = []string{"ec2.amazonaws.com"}
		}))
	}
	return out
}

// templateNamed finds a launch template by id or name (zero when missing:
// the service then answers not-found, after authorization as in AWS).
func (s *Server) templateNamed(id, name string) LaunchTemplate {
	for _, lt := range s.w.LaunchTemplates() {
		if id != "" && lt.ID == id || name != "" && lt.Name == name {
			return lt
		}
	}
	if id == "" {
		id = "*"
	}
	return LaunchTemplate{ID: id}
}

// resourceOf names the kind and tags of an EC2 resource id.
func (s *Server) resourceOf(id string) (string, map[string]string) {
	switch {
	case strings.HasPrefix(id, "i-"):
		in, _ := s.w.Instance(id)
		return "instance", in.Tags
	case strings.HasPrefix(id, "lt-"):
		lt := s.templateNamed(id, "")
		return "launch-template", lt.Tags
	case strings.HasPrefix(id, "fleet-"):
		return "fleet", nil
	}
	return "resource", nil
}

func (s *Server) iamAuthorizations(p params) []iampolicy.Request {
	action := "iam:" + p.get("Action")
	name := p.get("InstanceProfileName")
	ip, exists := s.w.GetInstanceProfile(name)
	path := ip.Path
	if !exists {
		path = p.get("Path")
	}
	if path == "" {
		path = "/"
	}
	arn := s.w.iamArn("instance-profile", path, name)
	if p.get("Action") == "ListInstanceProfilesForRole" {
		// Authorized on the role it lists for, as IAM does.
		arn = s.w.iamArn("role", "/", p.get("RoleName"))
	}
	ctx := map[string][]string{}
	tagContext(ctx, "aws:ResourceTag/", ip.Tags)
	reqTags := iamTags(p)
	tagContext(ctx, "aws:RequestTag/", reqTags)
	out := []iampolicy.Request{{Action: action, Resource: arn, Context: ctx}}
	switch p.get("Action") {
	case "CreateInstanceProfile":
		if len(reqTags) > 0 {
			out = append(out, iampolicy.Request{Action: "iam:TagInstanceProfile", Resource: arn, Context: ctx})
		}
	case "AddRoleToInstanceProfile":
		out = append(out, iampolicy.Request{Action: "iam:PassRole", Resource: s.w.iamArn("role", "/", p.get("RoleName")),
			Context: map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}})
	}
	return out
}

// iamTags reads Tags.member.N.Key / .Value without validating them (the
// request is validated by its handler after authorization).
func iamTags(p params) map[string]string {
	var m map[string]string
	for _, st := range p.structs("Tags.member") {
		if m == nil {
			m = map[string]string{}
		}
		m[p.get(st+".Key")] = p.get(st + ".Value")
	}
	return m
}
