package convert

import (
	"encoding/json"
	"fmt"
	"sort"
)

// fields walks one JSON object of a source manifest. Every key a converter
// reads is marked; done reports the keys nobody read, so a field Nodesmith
// has no place for becomes a warning instead of vanishing.
type fields struct {
	m    map[string]any
	path string
	used map[string]bool
	c    *converter
}

func (c *converter) fields(m map[string]any, path string) *fields {
	return &fields{m: m, path: path, used: map[string]bool{}, c: c}
}

func (f *fields) at(key string) string {
	if f.path == "" {
		return key
	}
	return f.path + "." + key
}

// raw returns the value of key and marks it read.
func (f *fields) raw(key string) (any, bool) {
	if f == nil || f.m == nil {
		return nil, false
	}
	v, ok := f.m[key]
	if ok {
		f.used[key] = true
	}
	return v, ok && v != nil
}

// ignore marks keys read without using them (server-set fields).
func (f *fields) ignore(keys ...string) {
	for _, k := range keys {
		f.raw(k)
	}
}

func (f *fields) str(key string) string {
	v, ok := f.raw(key)
	if !ok {
		return ""
	}
	s, isString := v.(string)
	if !isString {
		f.c.errorf("%s: want a string, got %v", f.at(key), v)
	}
	return s
}

// strPtr is str for optional fields: nil when absent.
func (f *fields) strPtr(key string) *string {
	if _, ok := f.m[key]; !ok || f.m[key] == nil {
		f.raw(key)
		return nil
	}
	s := f.str(key)
	return &s
}

// obj returns the object under key (nil when absent).
func (f *fields) obj(key string) *fields {
	v, ok := f.raw(key)
	if !ok {
		return nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		f.c.errorf("%s: want an object, got %v", f.at(key), v)
		return nil
	}
	return f.c.fields(m, f.at(key))
}

// list returns the objects of the list under key.
func (f *fields) list(key string) []*fields {
	v, ok := f.raw(key)
	if !ok {
		return nil
	}
	items, isList := v.([]any)
	if !isList {
		f.c.errorf("%s: want a list, got %v", f.at(key), v)
		return nil
	}
	out := make([]*fields, 0, len(items))
	for i, it := range items {
		m, isMap := it.(map[string]any)
		if !isMap {
			f.c.errorf("%s[%d]: want an object, got %v", f.at(key), i, it)
			continue
		}
		out = append(out, f.c.fields(m, fmt.Sprintf("%s[%d]", f.at(key), i)))
	}
	return out
}

// decode reads key into out through JSON, for values whose shape is the
// same in Karpenter and Nodesmith (taints, resource lists, tag maps).
func (f *fields) decode(key string, out any) bool {
	v, ok := f.raw(key)
	if !ok {
		return false
	}
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		f.c.errorf("%s: %v", f.at(key), err)
		return false
	}
	return true
}

// done warns about every key that was not read.
func (f *fields) done() {
	if f == nil {
		return
	}
	var left []string
	for k := range f.m {
		if !f.used[k] {
			left = append(left, k)
		}
	}
	sort.Strings(left)
	for _, k := range left {
		f.c.warn(f.at(k), "has no Nodesmith equivalent; dropped")
	}
}
