package iampolicy

import (
	"fmt"
	"strings"
)

// Request is one authorization: an action ("ec2:RunInstances") on one
// resource ARN ("*" for actions without resource-level permissions), with
// the condition context (key → values; keys case-insensitive).
type Request struct {
	Action   string
	Resource string
	Context  map[string][]string
}

// Decision is the outcome of Evaluate.
type Decision struct {
	Allowed bool
	// ExplicitDeny is true when a Deny statement matched.
	ExplicitDeny bool
	// Statement is the Sid (or index) of the deciding statement; empty for
	// an implicit deny.
	Statement string
}

// Evaluate decides r under p: an explicit Deny wins, else an Allow allows,
// else it is an implicit deny.
func (p *Policy) Evaluate(r Request) Decision {
	ctx := make(map[string][]string, len(r.Context))
	for k, v := range r.Context {
		ctx[strings.ToLower(k)] = v
	}
	var allow string
	for i, st := range p.Statement {
		if !st.applies(r, ctx) {
			continue
		}
		name := st.Sid
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		if st.Effect == "Deny" {
			return Decision{ExplicitDeny: true, Statement: name}
		}
		if allow == "" {
			allow = name
		}
	}
	if allow != "" {
		return Decision{Allowed: true, Statement: allow}
	}
	return Decision{}
}

func (st *Statement) applies(r Request, ctx map[string][]string) bool {
	if len(st.Action) > 0 && !anyMatch(st.Action, r.Action, true) {
		return false
	}
	if len(st.NotAction) > 0 && anyMatch(st.NotAction, r.Action, true) {
		return false
	}
	if len(st.Resource) > 0 && !anyMatch(st.Resource, r.Resource, false) {
		return false
	}
	if len(st.NotResource) > 0 && anyMatch(st.NotResource, r.Resource, false) {
		return false
	}
	for op, keys := range st.Condition {
		o, _ := parseOperator(op)
		for key, want := range keys {
			have, present := ctx[strings.ToLower(key)]
			if !o.holds(want, have, present) {
				return false
			}
		}
	}
	return true
}

func anyMatch(patterns []string, s string, fold bool) bool {
	for _, p := range patterns {
		if fold {
			if Wildcard(strings.ToLower(p), strings.ToLower(s)) {
				return true
			}
		} else if Wildcard(p, s) {
			return true
		}
	}
	return false
}

// Wildcard matches s against p, where * matches any run of characters and
// ? any one character, as IAM's Like operators and Action/Resource do.
func Wildcard(p, s string) bool {
	px, sx := 0, 0
	star, mark := -1, 0
	for sx < len(s) {
		switch {
		case px < len(p) && (p[px] == '?' || p[px] == s[sx]):
			px++
			sx++
		case px < len(p) && p[px] == '*':
			star, mark = px, sx
			px++
		case star >= 0:
			px = star + 1
			mark++
			sx = mark
		default:
			return false
		}
	}
	for px < len(p) && p[px] == '*' {
		px++
	}
	return px == len(p)
}
