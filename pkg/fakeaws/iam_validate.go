package fakeaws

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// iamConstraint is one member constraint of the IAM API (from botocore
// 1.43's IAM service model): its length bounds and pattern. model is the
// pattern as IAM prints it in a ValidationError; re is its Go translation.
type iamConstraint struct {
	min, max int
	model    string
	re       *regexp.Regexp
}

var (
	iamNameChars       = regexp.MustCompile(`^[\w+=,.@-]+$`)
	iamProfileName     = iamConstraint{1, 128, `[\w+=,.@-]+`, iamNameChars}
	iamRoleName        = iamConstraint{1, 64, `[\w+=,.@-]+`, iamNameChars}
	iamPath            = iamConstraint{1, 512, `(\u002F)|(\u002F[\u0021-\u007E]+\u002F)`, regexp.MustCompile(`^(?:/|/[\x{21}-\x{7E}]+/)$`)}
	iamPathPrefix      = iamConstraint{1, 512, `\u002F[\u0021-\u007F]*`, regexp.MustCompile(`^/[\x{21}-\x{7F}]*$`)}
	iamMarker          = iamConstraint{1, 320, `[\u0020-\u00FF]+`, regexp.MustCompile(`^[\x{20}-\x{FF}]+$`)}
	iamTagKey          = iamConstraint{1, 128, `[\p{L}\p{Z}\p{N}_.:/=+\-@]+`, regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]+$`)}
	iamTagValue        = iamConstraint{0, 256, `[\p{L}\p{Z}\p{N}_.:/=+\-@]*`, regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$`)}
	iamMaxTags         = 50
	iamMaxItemsRange   = [2]int{1, 1000}
	iamDefaultMaxItems = 100
)

// iamValidation collects member violations and renders them as IAM does:
// "N validation error(s) detected: Value 'v' at 'member' failed to satisfy
// constraint: ...; ...".
type iamValidation struct{ msgs []string }

func (v *iamValidation) add(value, member, constraint string) {
	v.msgs = append(v.msgs, fmt.Sprintf("Value '%s' at '%s' failed to satisfy constraint: Member must %s", value, member, constraint))
}

func (v *iamValidation) required(p params, name, member string, c iamConstraint) string {
	if !p.has(name) {
		v.msgs = append(v.msgs, fmt.Sprintf("Value null at '%s' failed to satisfy constraint: Member must not be null", member))
		return ""
	}
	return v.optional(p, name, member, c)
}

func (v *iamValidation) optional(p params, name, member string, c iamConstraint) string {
	if !p.has(name) {
		return ""
	}
	s := p.get(name)
	v.check(s, member, c)
	return s
}

func (v *iamValidation) check(s, member string, c iamConstraint) {
	n := utf8.RuneCountInString(s)
	switch {
	case n < c.min:
		v.add(s, member, "have length greater than or equal to "+strconv.Itoa(c.min))
	case n > c.max:
		v.add(s, member, "have length less than or equal to "+strconv.Itoa(c.max))
	case !c.re.MatchString(s):
		v.add(s, member, "satisfy regular expression pattern: "+c.model)
	}
}

func (v *iamValidation) maxItems(p params) int {
	if !p.has("MaxItems") {
		return iamDefaultMaxItems
	}
	s := p.get("MaxItems")
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		v.msgs = append(v.msgs, fmt.Sprintf("Value '%s' at 'maxItems' failed to satisfy constraint: Member must be a number", s))
	case n < iamMaxItemsRange[0]:
		v.add(s, "maxItems", "have value greater than or equal to 1")
	case n > iamMaxItemsRange[1]:
		v.add(s, "maxItems", "have value less than or equal to 1000")
	}
	return n
}

// tags reads Tags.member.N.Key / .Value and checks each and their count.
func (v *iamValidation) tags(p params) map[string]string {
	sts := p.structs("Tags.member")
	if len(sts) > iamMaxTags {
		v.add(fmt.Sprintf("[%d tags]", len(sts)), "tags", "have length less than or equal to 50")
	}
	var m map[string]string
	for i, st := range sts {
		if m == nil {
			m = map[string]string{}
		}
		k, val := p.get(st+".Key"), p.get(st+".Value")
		v.check(k, fmt.Sprintf("tags.%d.member.key", i+1), iamTagKey)
		v.check(val, fmt.Sprintf("tags.%d.member.value", i+1), iamTagValue)
		m[k] = val
	}
	return m
}

func (v *iamValidation) err() error {
	switch len(v.msgs) {
	case 0:
		return nil
	case 1:
		return iamErr(400, "ValidationError", "1 validation error detected: %s", v.msgs[0])
	}
	return iamErr(400, "ValidationError", "%d validation errors detected: %s", len(v.msgs), strings.Join(v.msgs, "; "))
}
