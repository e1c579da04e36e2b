package iampolicy

import (
	"fmt"
	"strings"
)

type setMode int

const (
	single setMode = iota
	forAll
	forAny
)

// operator is a parsed condition operator.
type operator struct {
	base     string // e.g. StringLike
	set      setMode
	ifExists bool
}

var known = map[string]bool{
	"StringEquals": true, "StringNotEquals": true, "StringLike": true, "StringNotLike": true,
	"StringEqualsIgnoreCase": true, "StringNotEqualsIgnoreCase": true,
	"ArnEquals": true, "ArnNotEquals": true, "ArnLike": true, "ArnNotLike": true,
	"Bool": true, "Null": true,
}

func parseOperator(op string) (operator, error) {
	o := operator{base: op}
	switch {
	case strings.HasPrefix(op, "ForAllValues:"):
		o.set, o.base = forAll, strings.TrimPrefix(op, "ForAllValues:")
	case strings.HasPrefix(op, "ForAnyValue:"):
		o.set, o.base = forAny, strings.TrimPrefix(op, "ForAnyValue:")
	}
	if b, ok := strings.CutSuffix(o.base, "IfExists"); ok && o.base != "Null" {
		o.base, o.ifExists = b, true
	}
	if !known[o.base] {
		return operator{}, fmt.Errorf("condition operator %q is not supported", op)
	}
	return o, nil
}

func (o operator) negated() bool { return strings.Contains(o.base, "Not") }

// match reports whether one context value matches one policy value under
// the operator's positive form.
func (o operator) match(want, have string) bool {
	switch strings.Replace(o.base, "Not", "", 1) {
	case "StringEquals", "ArnEquals":
		return want == have
	case "StringEqualsIgnoreCase":
		return strings.EqualFold(want, have)
	case "StringLike", "ArnLike":
		return Wildcard(want, have)
	case "Bool":
		return strings.EqualFold(want, have)
	}
	return false
}

// holds evaluates the operator for one key: want are the policy's values,
// have the context's (present false when the key is missing).
func (o operator) holds(want, have []string, present bool) bool {
	if o.base == "Null" {
		// "true": the key must be absent; "false": present.
		for _, w := range want {
			if strings.EqualFold(w, "true") == !present {
				return true
			}
		}
		return false
	}
	if !present {
		switch {
		case o.ifExists, o.set == forAll:
			return true
		case o.set == forAny:
			return false
		}
		return o.negated() // a missing key never equals, so "not equals" holds
	}
	anyOf := func(v string) bool {
		for _, w := range want {
			if o.match(w, v) {
				return true
			}
		}
		return false
	}
	switch o.set {
	case forAll:
		for _, v := range have {
			if anyOf(v) == o.negated() {
				return false
			}
		}
		return true
	case forAny:
		for _, v := range have {
			if anyOf(v) != o.negated() {
				return true
			}
		}
		return false
	}
	// Single-valued: any policy value matching makes the positive form true.
	m := false
	for _, v := range have {
		m = m || anyOf(v)
	}
	return m != o.negated()
}
