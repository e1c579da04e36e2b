package fakeaws

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// params is a decoded EC2 Query request: flat, dotted, 1-based list keys
// ("Filter.1.Value.2").
type params url.Values

func (p params) get(k string) string { return url.Values(p).Get(k) }

func (p params) has(k string) bool { _, ok := p[k]; return ok }

// list returns prefix.1, prefix.2, … values until the first gap.
func (p params) list(prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		k := prefix + "." + strconv.Itoa(i)
		if !p.has(k) {
			return out
		}
		out = append(out, p.get(k))
	}
}

// structs returns the prefixes prefix.1, prefix.2, … of a list of structures.
func (p params) structs(prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		k := prefix + "." + strconv.Itoa(i)
		found := false
		for key := range p {
			if strings.HasPrefix(key, k+".") {
				found = true
				break
			}
		}
		if !found {
			return out
		}
		out = append(out, k)
	}
}

func (p params) int(k string, def int) (int, error) {
	v := p.get(k)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, apiErr(400, "InvalidParameterValue", "Invalid value '%s' for %s", v, k)
	}
	return n, nil
}

func (p params) float(k string) (float64, bool) {
	v := p.get(k)
	if v == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil
}

// tags reads prefix.N.Key / prefix.N.Value.
func (p params) tags(prefix string) map[string]string {
	var m map[string]string
	for _, s := range p.structs(prefix) {
		if m == nil {
			m = map[string]string{}
		}
		m[p.get(s+".Key")] = p.get(s + ".Value")
	}
	return m
}

// tagSpecs reads TagSpecification lists, returning tags per resource type.
func (p params) tagSpecs(prefix string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, s := range p.structs(prefix) {
		rt := p.get(s + ".ResourceType")
		if out[rt] == nil {
			out[rt] = map[string]string{}
		}
		for k, v := range p.tags(s + ".Tag") {
			out[rt][k] = v
		}
	}
	return out
}

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
			return false, apiErr(400, "InvalidParameterValue", "The filter '%s' is invalid", f.name)
		}
		if !anyMatch(f.values, vals) {
			return false, nil
		}
	}
	return true, nil
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

// xmlw builds an EC2 XML response. Element names are lowerCamel and list
// entries are <item>, as the SDK's deserializers expect.
type xmlw struct{ b strings.Builder }

func (x *xmlw) open(n string)  { x.b.WriteString("<" + n + ">") }
func (x *xmlw) close(n string) { x.b.WriteString("</" + n + ">") }

func (x *xmlw) leaf(n, v string) {
	x.b.WriteString("<" + n + ">")
	escape(&x.b, v)
	x.b.WriteString("</" + n + ">")
}

func (x *xmlw) leafInt(n string, v int)   { x.leaf(n, strconv.Itoa(v)) }
func (x *xmlw) leafBool(n string, v bool) { x.leaf(n, strconv.FormatBool(v)) }
func (x *xmlw) leafTime(n string, t time.Time) {
	x.leaf(n, t.UTC().Format("2006-01-02T15:04:05.000Z"))
}
func (x *xmlw) leafPrice(n string, v float64) { x.leaf(n, strconv.FormatFloat(v, 'f', 6, 64)) }

func (x *xmlw) items(n string, vs []string) {
	x.open(n)
	for _, v := range vs {
		x.leaf("item", v)
	}
	x.close(n)
}

func (x *xmlw) tagSet(tags map[string]string) {
	x.open("tagSet")
	for _, k := range sortedKeys(tags) {
		x.open("item")
		x.leaf("key", k)
		x.leaf("value", tags[k])
		x.close("item")
	}
	x.close("tagSet")
}

func escape(b *strings.Builder, s string) {
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		case '\'':
			b.WriteString("&apos;")
		case '\r':
			b.WriteString("&#13;")
		default:
			b.WriteRune(r)
		}
	}
}

const ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

// ec2Doc wraps a body in <ActionResponse> with a request id.
func ec2Doc(action, requestID string, body func(x *xmlw)) string {
	var x xmlw
	x.b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	x.b.WriteString(fmt.Sprintf(`<%sResponse xmlns="%s">`, action, ec2Namespace))
	x.leaf("requestId", requestID)
	body(&x)
	x.close(action + "Response")
	return x.b.String()
}

// ec2ErrorDoc renders the EC2 error shape.
func ec2ErrorDoc(code, msg, requestID string) string {
	var x xmlw
	x.b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	x.open("Response")
	x.open("Errors")
	x.open("Error")
	x.leaf("Code", code)
	x.leaf("Message", msg)
	x.close("Error")
	x.close("Errors")
	x.leaf("RequestID", requestID)
	x.close("Response")
	return x.b.String()
}

func sortStrings(s []string) []string { sort.Strings(s); return s }
