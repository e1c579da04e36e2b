package fakeaws

import (
	"sort"
	"strconv"
	"strings"
)

// filter is one EC2 filter: Name and its Values (OR), with * and ? wildcards.
type filter struct {
	name   string
	values []string
}

func (p params) filters() []filter {
	var out []filter
	for _, s := range p.structs("Filter") {
		out = append(out, filter{name: p.get(s + ".Name"), values: p.list(s + ".Value")})
	}
	return out
}

// attrFunc answers a filter name with the resource's values for it; ok is
// false for filter names the resource does not support.
type attrFunc func(name string) (vals []string, ok bool)

// matchAll reports whether a resource passes every filter (AND across filters, OR within one).
func matchAll(fs []filter, attr attrFunc, tags map[string]string) (bool, error) {
	for _, f := range fs {
		vals, ok := tagAttr(f.name, tags)
		if !ok {
			vals, ok = attr(f.name)
		}
		if !ok {
			return false, invalidFilter(f.name, nil)
		}
		if !anyMatch(f.values, vals) {
			return false, nil
		}
	}
	return true, nil
}

// checkFilters fails on a filter name the resource does not answer, before
// any resource is looked at, so that a bad name is reported even when there
// is nothing to describe, as EC2 does. attr is the attribute function of any
// resource of the kind (names do not depend on the resource); documented
// lists the names EC2 documents, to tell "not simulated" from "invalid".
func checkFilters(fs []filter, attr attrFunc, documented map[string]bool) error {
	for _, f := range fs {
		if _, ok := tagAttr(f.name, nil); ok {
			continue
		}
		if _, ok := attr(f.name); !ok {
			return invalidFilter(f.name, documented)
		}
	}
	return nil
}

func invalidFilter(name string, documented map[string]bool) *APIError {
	if documented[name] {
		return apiErr(400, "InvalidParameterValue", "The filter '%s' is documented by EC2 but not simulated by fakeaws", name)
	}
	return apiErr(400, "InvalidParameterValue", "The filter '%s' is invalid", name)
}

func tagAttr(name string, tags map[string]string) ([]string, bool) {
	switch {
	case strings.HasPrefix(name, "tag:"):
		v, ok := tags[strings.TrimPrefix(name, "tag:")]
		if !ok {
			return nil, true
		}
		return []string{v}, true
	case name == "tag-key":
		return sortedKeys(tags), true
	case name == "tag-value":
		var vs []string
		for _, k := range sortedKeys(tags) {
			vs = append(vs, tags[k])
		}
		return vs, true
	}
	return nil, false
}

func anyMatch(patterns, vals []string) bool {
	for _, pat := range patterns {
		for _, v := range vals {
			if wildcard(pat, v) {
				return true
			}
		}
	}
	return false
}

// wildcard matches EC2 filter patterns: * is any run of characters
// (including "/"), ? is one character, and a backslash escapes either.
func wildcard(pat, s string) bool {
	p, r := []rune(pat), []rune(s)
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(r) {
		switch {
		case pi < len(p) && p[pi] == '\\' && pi+1 < len(p) && p[pi+1] == r[si]:
			pi += 2
			si++
		case pi < len(p) && p[pi] != '*' && p[pi] != '\\' && (p[pi] == '?' || p[pi] == r[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// page applies MaxResults/NextToken to n items: it returns the [from, to)
// window and the next token ("" at the end). Tokens are opaque offsets.
func page(p params, n, def, minMax, maxMax int) (from, to int, next string, err error) {
	limit, err := p.int("MaxResults", def)
	if err != nil {
		return 0, 0, "", err
	}
	if p.has("MaxResults") && (limit < minMax || limit > maxMax) {
		return 0, 0, "", apiErr(400, "InvalidParameterValue", "Value ( %d ) for parameter maxResults is invalid. Expecting a value between %d and %d.", limit, minMax, maxMax)
	}
	if tok := p.get("NextToken"); tok != "" {
		off, perr := strconv.Atoi(strings.TrimPrefix(tok, "nt-"))
		if perr != nil || !strings.HasPrefix(tok, "nt-") || off < 0 || off > n {
			return 0, 0, "", apiErr(400, "InvalidPaginationToken", "Invalid pagination token: %s", tok)
		}
		from = off
	}
	to = n
	if limit > 0 && from+limit < n {
		to = from + limit
		next = "nt-" + strconv.Itoa(to)
	}
	return from, to, next, nil
}

func sortStrings(s []string) []string { sort.Strings(s); return s }
