package iampolicy

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// StringList is a JSON string or array of strings, as policy documents
// write single values.
type StringList []string

// UnmarshalJSON accepts "x" and ["x", "y"].
func (s *StringList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = StringList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings: %w", err)
	}
	*s = many
	return nil
}

// Policy is an identity policy document.
type Policy struct {
	Version   string      `json:"Version"`
	Statement []Statement `json:"Statement"`
}

// Statement is one statement of a policy.
type Statement struct {
	Sid         string                           `json:"Sid,omitempty"`
	Effect      string                           `json:"Effect"`
	Action      StringList                       `json:"Action,omitempty"`
	NotAction   StringList                       `json:"NotAction,omitempty"`
	Resource    StringList                       `json:"Resource,omitempty"`
	NotResource StringList                       `json:"NotResource,omitempty"`
	Condition   map[string]map[string]StringList `json:"Condition,omitempty"`
}

// Parse reads a policy document and refuses what this package cannot
// evaluate faithfully.
func Parse(doc []byte) (*Policy, error) {
	var p Policy
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("parsing the policy document: %w", err)
	}
	for i, st := range p.Statement {
		where := fmt.Sprintf("statement %d (%s)", i, st.Sid)
		if st.Effect != "Allow" && st.Effect != "Deny" {
			return nil, fmt.Errorf("%s: Effect %q is not Allow or Deny", where, st.Effect)
		}
		if (len(st.Action) == 0) == (len(st.NotAction) == 0) {
			return nil, fmt.Errorf("%s: exactly one of Action and NotAction is required", where)
		}
		if (len(st.Resource) == 0) == (len(st.NotResource) == 0) {
			return nil, fmt.Errorf("%s: exactly one of Resource and NotResource is required", where)
		}
		for op, keys := range st.Condition {
			if _, err := parseOperator(op); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			for k, vs := range keys {
				for _, v := range append(StringList{k}, vs...) {
					if strings.Contains(v, "${") {
						return nil, fmt.Errorf("%s: policy variables (%s) are not supported", where, v)
					}
				}
			}
		}
	}
	return &p, nil
}

// Actions lists every action pattern the policy allows (Allow statements'
// Action entries), sorted, for checks that a policy grants a call.
func (p *Policy) Actions() []string {
	seen := map[string]bool{}
	for _, st := range p.Statement {
		if st.Effect == "Allow" {
			for _, a := range st.Action {
				seen[a] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// Without returns a copy of p with action removed from every statement
// (statements left with no action are dropped): the policy a test uses to
// show that action is needed.
func (p *Policy) Without(action string) *Policy {
	out := &Policy{Version: p.Version}
	for _, st := range p.Statement {
		st.Action = slices.DeleteFunc(slices.Clone(st.Action), func(a string) bool { return a == action })
		if len(st.Action) > 0 {
			out.Statement = append(out.Statement, st)
		}
	}
	return out
}
