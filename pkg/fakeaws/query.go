package fakeaws

import (
	"net/url"
	"strconv"
	"strings"
)

// params is a decoded Query-protocol request (EC2 and IAM): flat, dotted,
// 1-based list keys ("Filter.1.Value.2"). It indexes the list positions once,
// so that reading a list of structures costs one lookup per entry instead of
// a scan of every key (a request body may carry a million keys).
type params struct {
	v url.Values
	// structIdx maps a list prefix ("Filter", "LaunchTemplateConfigs.1.Overrides")
	// to the positions N for which some key starts with "prefix.N.".
	structIdx map[string]map[int]bool
}

func newParams(v url.Values) params {
	p := params{v: v, structIdx: map[string]map[int]bool{}}
	for k := range v {
		// Every ".N." inside the key names a position of the list before it.
		for i := 0; i < len(k); i++ {
			if k[i] != '.' {
				continue
			}
			j := i + 1
			for j < len(k) && k[j] >= '0' && k[j] <= '9' {
				j++
			}
			if j == i+1 || j >= len(k) || k[j] != '.' || j-i > 8 || k[i+1] == '0' {
				continue
			}
			n, err := strconv.Atoi(k[i+1 : j])
			if err != nil || n < 1 {
				continue
			}
			prefix := k[:i]
			if p.structIdx[prefix] == nil {
				p.structIdx[prefix] = map[int]bool{}
			}
			p.structIdx[prefix][n] = true
		}
	}
	return p
}

func (p params) get(k string) string { return p.v.Get(k) }

func (p params) has(k string) bool { _, ok := p.v[k]; return ok }

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

// structs returns the prefixes prefix.1, prefix.2, … of a list of structures,
// until the first gap.
func (p params) structs(prefix string) []string {
	idx := p.structIdx[prefix]
	var out []string
	for i := 1; idx[i]; i++ {
		out = append(out, prefix+"."+strconv.Itoa(i))
	}
	return out
}

// withPrefix returns the keys that start with prefix, unordered.
func (p params) withPrefix(prefix string) []string {
	var out []string
	for k := range p.v {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
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

// queryFingerprint is the canonical form of a request's parameters except
// the protocol's own (Action, Version, DryRun) and those named in skip: keys
// sorted, values in order.
func queryFingerprint(p params, skip ...string) string {
	v := url.Values{}
	for k, vs := range p.v {
		switch {
		case k == "Action" || k == "Version" || k == "DryRun" || contains(skip, k):
			continue
		}
		v[k] = vs
	}
	return v.Encode() // Encode sorts by key
}
