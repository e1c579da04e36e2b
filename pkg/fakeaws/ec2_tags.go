package fakeaws

import (
	"strings"
	"unicode/utf8"
)

// EC2 tag limits (API reference, Tag and CreateTags): keys up to 127
// characters and not starting with "aws:", values up to 256 characters, at
// most 50 user tags per resource.
const (
	maxTagKeyLen   = 127
	maxTagValueLen = 256
	maxTagsPerRes  = 50
	awsTagPrefix   = "aws:"
)

// checkTags validates tags a caller sets (CreateTags, TagSpecification).
func checkTags(tags map[string]string) error {
	for _, k := range sortedKeys(tags) {
		v := tags[k]
		switch {
		case k == "":
			return apiErr(400, "InvalidParameterValue", "Tag key cannot be empty")
		case strings.HasPrefix(k, awsTagPrefix):
			return apiErr(400, "InvalidParameterValue", "Value ( %s ) for parameter key is invalid. Tag keys starting with 'aws:' are reserved for internal use", k)
		case utf8.RuneCountInString(k) > maxTagKeyLen:
			return apiErr(400, "InvalidParameterValue", "Value ( %s ) for parameter key is invalid. Tag keys accept at most %d characters", k, maxTagKeyLen)
		case utf8.RuneCountInString(v) > maxTagValueLen:
			return apiErr(400, "InvalidParameterValue", "Value ( %s ) for parameter value is invalid. Tag values accept at most %d characters", v, maxTagValueLen)
		}
	}
	return nil
}

// userTagCount counts the tags that count against the per-resource limit.
func userTagCount(tags map[string]string) int {
	n := 0
	for k := range tags {
		if !strings.HasPrefix(k, awsTagPrefix) {
			n++
		}
	}
	return n
}

func tagLimitErr() *APIError {
	return apiErr(400, "TagLimitExceeded", "The maximum number of Tags for a resource has been reached.")
}

func (s *Server) createTags(p params) (func(x *xmlw), error) {
	ids := p.list("ResourceId")
	if len(ids) == 0 {
		return nil, apiErr(400, "MissingParameter", "The request must contain the parameter ResourceId")
	}
	if err := checkTaggableIDs(ids); err != nil {
		return nil, err
	}
	tags := p.tags("Tag")
	if err := checkTags(tags); err != nil {
		return nil, err
	}
	if err := s.w.CreateTags(ids, tags); err != nil {
		return nil, err
	}
	return func(x *xmlw) { x.leafBool("return", true) }, nil
}

// TagMatch names a tag for DeleteTags: Key always, Value only when the
// caller gave one (then only a tag with that exact value is removed).
type TagMatch struct {
	Key      string
	Value    string
	HasValue bool
}

func (s *Server) deleteTags(p params) (func(x *xmlw), error) {
	ids := p.list("ResourceId")
	if len(ids) == 0 {
		return nil, apiErr(400, "MissingParameter", "The request must contain the parameter ResourceId")
	}
	if err := checkTaggableIDs(ids); err != nil {
		return nil, err
	}
	var matches []TagMatch
	for _, st := range p.structs("Tag") {
		m := TagMatch{Key: p.get(st + ".Key"), Value: p.get(st + ".Value"), HasValue: p.has(st + ".Value")}
		if strings.HasPrefix(m.Key, awsTagPrefix) {
			return nil, apiErr(400, "InvalidParameterValue", "Value ( %s ) for parameter key is invalid. Tag keys starting with 'aws:' are reserved for internal use", m.Key)
		}
		matches = append(matches, m)
	}
	if err := s.w.DeleteTags(ids, matches); err != nil {
		return nil, err
	}
	return func(x *xmlw) { x.leafBool("return", true) }, nil
}

// CreateTags adds or overwrites tags on instances, subnets, security groups,
// images or launch templates. Every id is checked first, so a bad id changes
// nothing, as in EC2.
func (w *World) CreateTags(ids []string, tags map[string]string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		m := w.tagsOf(id)
		if m == nil {
			return notFoundByID(id)
		}
		merged := cloneTags(*m)
		if merged == nil {
			merged = map[string]string{}
		}
		for k, v := range tags {
			merged[k] = v
		}
		if userTagCount(merged) > maxTagsPerRes {
			return tagLimitErr()
		}
	}
	for _, id := range ids {
		m := w.tagsOf(id)
		if *m == nil {
			*m = map[string]string{}
		}
		for k, v := range tags {
			(*m)[k] = v
		}
	}
	return nil
}

// DeleteTags removes tags from resources: those matches name (a match with a
// value removes the tag only when the value is equal), or with no matches
// every tag except those with the aws: prefix, as EC2 does.
func (w *World) DeleteTags(ids []string, matches []TagMatch) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if w.tagsOf(id) == nil {
			return notFoundByID(id)
		}
	}
	for _, id := range ids {
		m := *w.tagsOf(id)
		if len(matches) == 0 {
			for k := range m {
				if !strings.HasPrefix(k, awsTagPrefix) {
					delete(m, k)
				}
			}
			continue
		}
		for _, t := range matches {
			if v, ok := m[t.Key]; ok && (!t.HasValue || v == t.Value) {
				delete(m, t.Key)
			}
		}
	}
	return nil
}

// notFoundByID is the not-found error of the id's family.
func notFoundByID(id string) *APIError {
	k, ok := taggableKind(id)
	if !ok {
		return apiErr(400, "InvalidID", "The ID '%s' is not valid", id)
	}
	return apiErr(400, k.notFound, "The %s '%s' does not exist", k.noun, id)
}
